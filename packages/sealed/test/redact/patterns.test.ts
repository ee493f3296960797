import { describe, expect, it } from 'vitest';
import { DEFAULT_KINDS, defaultRedactor } from '../../src/redact/index.js';
import { fake } from './fixtures.js';

interface Positive {
  name: string;
  input: string;
  expected: string;
  counts: Record<string, number>;
}

const M = (kind: string): string => `[redacted:${kind}]`;

/** Per kind: realistic text with the secret in it, and exactly what must come out. */
const positives: Record<string, Positive[]> = {
  'pem-private-key': [
    {
      name: 'RSA key pasted in a shell transcript',
      input: `$ cat ~/.ssh/deploy_rsa\n${fake.pemRsa}\n$ chmod 600 ~/.ssh/deploy_rsa`,
      expected: `$ cat ~/.ssh/deploy_rsa\n${M('pem-private-key')}\n$ chmod 600 ~/.ssh/deploy_rsa`,
      counts: { 'pem-private-key': 1 },
    },
    {
      name: 'PKCS#8, OpenSSH, EC, legacy encrypted DSA and encrypted PKCS#8 blocks',
      input: [
        fake.pemPkcs8,
        fake.pemOpenssh,
        fake.pemEc,
        fake.pemEncryptedLegacy,
        fake.pemPkcs8Encrypted,
      ].join('\n\n'),
      expected: Array(5).fill(M('pem-private-key')).join('\n\n'),
      counts: { 'pem-private-key': 5 },
    },
    {
      name: 'a service-account JSON with the key escaped inside a string',
      input: `{"type": "service_account", "private_key": "${fake.pemPkcs8.replace(/\n/g, '\\n')}\\n", "client_email": "a@b.iam"}`,
      expected: `{"type": "service_account", "private_key": "${M('pem-private-key')}\\n", "client_email": "a@b.iam"}`,
      counts: { 'pem-private-key': 1 },
    },
  ],
  'aws-access-key-id': [
    {
      name: 'an .env file',
      input: `AWS_REGION=eu-west-1\nAWS_ACCESS_KEY_ID=${fake.awsKeyId}\n`,
      expected: `AWS_REGION=eu-west-1\nAWS_ACCESS_KEY_ID=${M('aws-access-key-id')}\n`,
      counts: { 'aws-access-key-id': 1 },
    },
    {
      name: 'a temporary ASIA key in `aws sts` JSON output',
      input: `{\n  "Credentials": {\n    "AccessKeyId": "${fake.awsTempKeyId}",\n    "Expiration": "2026-12-02T13:00:00Z"\n  }\n}`,
      expected: `{\n  "Credentials": {\n    "AccessKeyId": "${M('aws-access-key-id')}",\n    "Expiration": "2026-12-02T13:00:00Z"\n  }\n}`,
      counts: { 'aws-access-key-id': 1 },
    },
  ],
  'aws-secret-key': [
    {
      name: '~/.aws/credentials',
      input: `[default]\naws_access_key_id = ${fake.awsKeyId}\naws_secret_access_key = ${fake.awsSecret}\n`,
      expected: `[default]\naws_access_key_id = ${M('aws-access-key-id')}\naws_secret_access_key = ${M('aws-secret-key')}\n`,
      counts: { 'aws-access-key-id': 1, 'aws-secret-key': 1 },
    },
    {
      name: '`aws sts assume-role` JSON and an export line',
      input: `"SecretAccessKey": "${fake.awsSecret}",\nexport AWS_SECRET_ACCESS_KEY=${fake.awsSecret}`,
      expected: `"SecretAccessKey": "${M('aws-secret-key')}",\nexport AWS_SECRET_ACCESS_KEY=${M('aws-secret-key')}`,
      counts: { 'aws-secret-key': 2 },
    },
  ],
  'github-token': [
    {
      name: 'a git remote in a shell transcript and a classic PAT in .env',
      input: `$ gh auth status\n  Token: ${fake.ghs}\nGITHUB_TOKEN=${fake.ghp}`,
      expected: `$ gh auth status\n  Token: ${M('github-token')}\nGITHUB_TOKEN=${M('github-token')}`,
      counts: { 'github-token': 2 },
    },
    {
      name: 'a fine-grained PAT in a curl command',
      input: `curl -H "Authorization: token ${fake.githubPat}" https://api.github.com/user`,
      expected: `curl -H "Authorization: token ${M('github-token')}" https://api.github.com/user`,
      counts: { 'github-token': 1 },
    },
  ],
  'openai-key': [
    {
      name: 'legacy and project keys in .env and Python',
      input: `OPENAI_API_KEY=${fake.openai}\nclient = OpenAI(api_key="${fake.openaiProject}")`,
      expected: `OPENAI_API_KEY=${M('openai-key')}\nclient = OpenAI(api_key="${M('openai-key')}")`,
      counts: { 'openai-key': 2 },
    },
  ],
  'anthropic-key': [
    {
      name: 'an error message that echoes the key',
      input: `anthropic.AuthenticationError: invalid x-api-key ${fake.anthropic}\n    at Client.request (client.js:42:11)`,
      expected: `anthropic.AuthenticationError: invalid x-api-key ${M('anthropic-key')}\n    at Client.request (client.js:42:11)`,
      counts: { 'anthropic-key': 1 },
    },
  ],
  'slack-token': [
    {
      name: 'bot and user tokens in a JSON config',
      input: `{"bot": "${fake.slackBot}", "user": "${fake.slackUser}", "channel": "C0123456789"}`,
      expected: `{"bot": "${M('slack-token')}", "user": "${M('slack-token')}", "channel": "C0123456789"}`,
      counts: { 'slack-token': 2 },
    },
  ],
  'stripe-key': [
    {
      name: 'live secret and restricted keys in a curl command and .env',
      input: `curl https://api.stripe.com/v1/charges -u ${fake.stripeLive}:\nSTRIPE_RESTRICTED=${fake.stripeRestricted}`,
      expected: `curl https://api.stripe.com/v1/charges -u ${M('stripe-key')}:\nSTRIPE_RESTRICTED=${M('stripe-key')}`,
      counts: { 'stripe-key': 2 },
    },
  ],
  'google-api-key': [
    {
      name: 'a key in a request URL in a stack trace',
      input: `Error: 403 at GET https://maps.googleapis.com/maps/api/geocode/json?address=x&key=${fake.google}\n    at fetch (node:internal)`,
      expected: `Error: 403 at GET https://maps.googleapis.com/maps/api/geocode/json?address=x&key=${M('google-api-key')}\n    at fetch (node:internal)`,
      counts: { 'google-api-key': 1 },
    },
  ],
  jwt: [
    {
      name: 'a JWT in a cookie header and in JSON',
      input: `Set-Cookie: session=${fake.jwt}; HttpOnly\n{"id_token": "${fake.jwt}"}`,
      expected: `Set-Cookie: session=${M('jwt')}; HttpOnly\n{"id_token": "${M('jwt')}"}`,
      counts: { jwt: 2 },
    },
  ],
  'bearer-token': [
    {
      name: 'a curl command and an HTTP request dump',
      input: `curl -s -H 'Authorization: Bearer ${fake.bearer}' https://api.example.com/v1/me\n> GET / HTTP/1.1\n> authorization: bearer ${fake.bearer}==\n`,
      expected: `curl -s -H 'Authorization: Bearer ${M('bearer-token')}' https://api.example.com/v1/me\n> GET / HTTP/1.1\n> authorization: bearer ${M('bearer-token')}\n`,
      counts: { 'bearer-token': 2 },
    },
    {
      name: 'headers as JSON',
      input: `{"headers": {"Authorization": "Bearer ${fake.bearer}"}}`,
      expected: `{"headers": {"Authorization": "Bearer ${M('bearer-token')}"}}`,
      counts: { 'bearer-token': 1 },
    },
  ],
  'url-credentials': [
    {
      name: 'a database URL in .env keeps scheme, user and host',
      input: `DATABASE_URL=postgres://app_user:${fake.password}@db.internal:5432/app?sslmode=require`,
      expected: `DATABASE_URL=postgres://app_user:${M('url-credentials')}@db.internal:5432/app?sslmode=require`,
      counts: { 'url-credentials': 1 },
    },
    {
      name: 'a git clone in a shell transcript and a redis URL without user',
      input: `$ git clone https://deploy:${fake.password}@git.example.com/team/repo.git\nREDIS_URL=redis://:${fake.password}@cache:6379/0`,
      expected: `$ git clone https://deploy:${M('url-credentials')}@git.example.com/team/repo.git\nREDIS_URL=redis://:${M('url-credentials')}@cache:6379/0`,
      counts: { 'url-credentials': 2 },
    },
  ],
  'secret-assignment': [
    {
      name: '.env lines',
      input: `DB_HOST=localhost\nDB_PASSWORD=${fake.password}\nSESSION_SECRET='${fake.password}'\nexport API_KEY="abc123def456"`,
      expected: `DB_HOST=localhost\nDB_PASSWORD=${M('secret-assignment')}\nSESSION_SECRET='${M('secret-assignment')}'\nexport API_KEY="${M('secret-assignment')}"`,
      counts: { 'secret-assignment': 3 },
    },
    {
      name: 'a JSON config, YAML, and a query string',
      input: `{"db": {"user": "app", "password": "${fake.password}"}, "clientSecret": "s3cr3t-value"}\nsmtp:\n  passwd: hunter2\nGET /cb?code=1&access_token=abcDEF123&state=x`,
      expected: `{"db": {"user": "app", "password": "${M('secret-assignment')}"}, "clientSecret": "${M('secret-assignment')}"}\nsmtp:\n  passwd: ${M('secret-assignment')}\nGET /cb?code=1&access_token=${M('secret-assignment')}&state=x`,
      counts: { 'secret-assignment': 4 },
    },
    {
      name: 'JSON serialised inside a tool result string',
      input: `{"output": "{\\"private_key\\": \\"abc123xyz\\", \\"ok\\": true}"}`,
      expected: `{"output": "{\\"private_key\\": \\"${M('secret-assignment')}\\", \\"ok\\": true}"}`,
      counts: { 'secret-assignment': 1 },
    },
  ],
};

/** Per kind: look-alikes that must come back unchanged. */
const negatives: Record<string, Array<{ name: string; input: string }>> = {
  'pem-private-key': [
    { name: 'a PEM public key', input: `pubkey:\n${fake.pemPublic}\n` },
    { name: 'a certificate', input: `${fake.pemCertificate}\n` },
    {
      name: 'a BEGIN line mentioned in prose',
      input: 'Your key file must start with -----BEGIN RSA PRIVATE KEY----- to work.',
    },
  ],
  'aws-access-key-id': [
    { name: 'a too-short AKIA word', input: 'the AKIAEXAMPLE placeholder and AKIA1234' },
    { name: 'too long, and lowercase', input: `AKIA${'Q7XR2M4PLN6VTB3HX'} akia${'q7xr2m4pln6vtb3h'}` },
    { name: 'inside a longer word', input: `XAKIA${'Q7XR2M4PLN6VTB3H'}` },
  ],
  'aws-secret-key': [
    {
      name: 'a git sha and 40 base64 characters without their name',
      input: `commit ${fake.gitSha}\nblob ${fake.awsSecret}`,
    },
    {
      name: 'the name with a placeholder, and in prose',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell placeholder, on purpose
      input: 'aws_secret_access_key = ${AWS_SECRET}\nset aws_secret_access_key in ~/.aws',
    },
  ],
  'github-token': [
    { name: 'ghp_ in prose and a git sha', input: `tokens start with ghp_ or gho_; HEAD is ${fake.gitSha}` },
    { name: 'one character short', input: `ghp_${'a'.repeat(35)} and github_pat_short` },
  ],
  'openai-key': [
    {
      name: 'sk- in prose and sk-learn',
      input: 'pip install scikit-learn (sk-learn); keys look like sk-...',
    },
    { name: 'a kebab-case name', input: 'see sk-my-kebab-case-component-name-here in the theme' },
  ],
  'anthropic-key': [
    { name: 'the prefix in prose and a short one', input: 'Keys start with sk-ant- e.g. sk-ant-api03-short' },
  ],
  'slack-token': [
    { name: 'a placeholder', input: 'SLACK_BOT_TOKEN is xoxb-your-token-here (see xoxb- docs)' },
  ],
  'stripe-key': [
    {
      name: 'test keys and the prefix in prose',
      input: `sk_test_${'a1B2c3D4e5F6g7H8i9J0k1L2'} and sk_live_ keys and sk_live_short`,
    },
  ],
  'google-api-key': [
    { name: 'one character short, and the word AIza', input: `AIza${'b'.repeat(34)} AIzaSomething` },
  ],
  jwt: [
    { name: 'a base64 blob that is not a JWT', input: 'data: eyJmb28iOiJiYXIifQ== and eyJhbGciOiJIUzI1NiJ9' },
    {
      name: 'three parts whose header has no alg',
      input: `${Buffer.from('{"foo":"bar"}').toString('base64url')}.${Buffer.from('{"a":1}').toString('base64url')}.abcdefghijk`,
    },
  ],
  'bearer-token': [
    { name: 'Bearer in prose', input: 'Use the Bearer scheme: send a bearer token in the header.' },
    {
      name: 'placeholders',
      input: 'Authorization: Bearer $TOKEN\nAuthorization: Bearer <token>\n"token_type": "Bearer"',
    },
  ],
  'url-credentials': [
    {
      name: 'URLs without a password',
      input:
        'https://user@example.com/path https://example.com:8443/a?b=c ssh://git@github.com/org/repo mailto:ann@example.com',
    },
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell placeholder, on purpose
    { name: 'a placeholder password', input: 'postgres://app:${DB_PASSWORD}@db:5432/app' },
  ],
  'secret-assignment': [
    {
      name: 'null, empty and boolean values',
      input: 'token: null\npassword=\nsecret: true\n{"password": "", "api_key": null}',
    },
    {
      name: 'counts, descriptors and the working directory',
      input:
        'max_tokens: 4096\n"token_type": "Bearer"\nPWD=/home/me/project\npassword_file: /run/secrets/db\ntoken_count=12',
    },
    {
      name: 'code, placeholders and prose',
      input:
        'const password = process.env.DB_PASSWORD;\nconst token = getToken();\npassword: <your-password>\nI reset the password: done.\npassword: ********',
    },
    { name: 'a git sha and a UUID under other keys', input: `commit=${fake.gitSha} request_id=${fake.uuid}` },
  ],
};

describe('default patterns', () => {
  it('cover every stable kind', () => {
    expect([...DEFAULT_KINDS].sort()).toEqual(Object.keys(positives).sort());
    expect(Object.keys(negatives).sort()).toEqual(Object.keys(positives).sort());
  });

  for (const [kind, cases] of Object.entries(positives)) {
    describe(kind, () => {
      for (const c of cases) {
        it(`redacts: ${c.name}`, () => {
          const result = defaultRedactor.redactText(c.input);
          expect(result.text).toBe(c.expected);
          expect(result.counts).toEqual(c.counts);
          expect(defaultRedactor.redactText(result.text)).toEqual({ text: result.text, counts: {} });
        });
      }
      for (const c of negatives[kind] ?? []) {
        it(`leaves alone: ${c.name}`, () => {
          expect(defaultRedactor.redactText(c.input)).toEqual({ text: c.input, counts: {} });
        });
      }
    });
  }

  it('redacts several kinds in one text and counts each', () => {
    const text = `AWS_ACCESS_KEY_ID=${fake.awsKeyId}\nGITHUB_TOKEN=${fake.ghp}\nDB_PASSWORD=x9y8z7\n${fake.pemRsa}`;
    const result = defaultRedactor.redactText(text);
    expect(result.counts).toEqual({
      'aws-access-key-id': 1,
      'github-token': 1,
      'secret-assignment': 1,
      'pem-private-key': 1,
    });
    for (const secret of [fake.awsKeyId, fake.ghp, 'x9y8z7', 'MIIEowIBAAKCAQEA'])
      expect(result.text).not.toContain(secret);
  });

  it('never redacts a marker, whatever surrounds it', () => {
    const text =
      'password=[redacted:jwt] "token": "[redacted:github-token]" https://u:[redacted:url-credentials]@h';
    expect(defaultRedactor.redactText(text)).toEqual({ text, counts: {} });
  });
});
