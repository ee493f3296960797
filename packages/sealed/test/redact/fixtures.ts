/**
 * Fake secrets of the right shapes, built at run time (none is a real credential, and none sits in
 * the source as one literal).
 */

const ALNUM = 'A7bC3dE9fG2hJ5kL8mN4pQ6rS1tU0vWxYz';

/** A deterministic base62 string of `n` characters mixing upper, lower and digits. */
export function alnum(n: number, seed = 0): string {
  let out = '';
  for (let i = 0; i < n; i++) out += ALNUM[(i * 7 + seed * 13 + 3) % ALNUM.length];
  return out;
}

function b64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

export const fake = {
  awsKeyId: `AKIA${'Q7XR2M4PLN6VTB3H'}`,
  awsTempKeyId: `ASIA${'Z3KD8W1QMX5RTC7N'}`,
  awsSecret: `wJalrXUtnFEMI/K7MDENG/bPxRfiCY${'Z9q8R7s6T5'}`,
  ghp: `ghp_${alnum(36, 1)}`,
  ghs: `ghs_${alnum(36, 2)}`,
  githubPat: `github_pat_${alnum(22, 3)}_${alnum(59, 4)}`,
  openai: `sk-${alnum(48, 5)}`,
  openaiProject: `sk-proj-${alnum(64, 6)}_${alnum(40, 7)}-${alnum(20, 8)}`,
  anthropic: `sk-ant-api03-${alnum(93, 9)}AA`,
  slackBot: `xoxb-1234567890123-1234567890123-${alnum(24, 10)}`,
  slackUser: `xoxp-1234567890-1234567890-1234567890-${alnum(32, 11).toLowerCase()}`,
  stripeLive: `sk_live_${alnum(24, 12)}`,
  stripeRestricted: `rk_live_${alnum(99, 13)}`,
  google: `AIza${alnum(35, 14)}`,
  jwt: `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url({ sub: '1234567890', name: 'Ann', iat: 1516239022 })}.${alnum(43, 15)}`,
  bearer: `${alnum(32, 16)}.${alnum(12, 17)}`,
  password: 'c0rrect-H0rse-battery',
  pemRsa: [
    '-----BEGIN RSA PRIVATE KEY-----',
    `MIIEowIBAAKCAQEA${alnum(48, 18)}`,
    `${alnum(64, 19)}`,
    `${alnum(40, 20)}==`,
    '-----END RSA PRIVATE KEY-----',
  ].join('\n'),
  pemPkcs8: [
    '-----BEGIN PRIVATE KEY-----',
    `MIIEvQIBADANBg${alnum(50, 21)}`,
    '-----END PRIVATE KEY-----',
  ].join('\n'),
  pemOpenssh: [
    '-----BEGIN OPENSSH PRIVATE KEY-----',
    `b3BlbnNzaC1rZXktdjEAAAAA${alnum(40, 22)}`,
    '-----END OPENSSH PRIVATE KEY-----',
  ].join('\n'),
  pemEc: ['-----BEGIN EC PRIVATE KEY-----', `MHcCAQEEI${alnum(50, 23)}`, '-----END EC PRIVATE KEY-----'].join(
    '\n',
  ),
  pemEncryptedLegacy: [
    '-----BEGIN DSA PRIVATE KEY-----',
    'Proc-Type: 4,ENCRYPTED',
    'DEK-Info: AES-128-CBC,3F2A1B7C9D0E4F5A6B7C8D9E0F1A2B3C',
    '',
    `${alnum(64, 24)}`,
    '-----END DSA PRIVATE KEY-----',
  ].join('\n'),
  pemPkcs8Encrypted: [
    '-----BEGIN ENCRYPTED PRIVATE KEY-----',
    `MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkq${alnum(40, 25)}`,
    '-----END ENCRYPTED PRIVATE KEY-----',
  ].join('\n'),
  pemPublic: [
    '-----BEGIN PUBLIC KEY-----',
    `MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A${alnum(40, 26)}`,
    '-----END PUBLIC KEY-----',
  ].join('\n'),
  pemCertificate: [
    '-----BEGIN CERTIFICATE-----',
    `MIIDdzCCAl+gAwIBAgIE${alnum(60, 27)}`,
    '-----END CERTIFICATE-----',
  ].join('\n'),
  gitSha: '3f786850e387550fdab836ed7e6dc881de23001b',
  uuid: '123e4567-e89b-12d3-a456-426614174000',
};
