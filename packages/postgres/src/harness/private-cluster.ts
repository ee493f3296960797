import { execFile, execFileSync } from 'node:child_process';
import { existsSync, promises as fsp, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** The system user a private cluster runs as when the caller is root (postgres refuses root). */
export const PRIVATE_CLUSTER_USER = 'tidemark-pg';

/** Options of {@link startPrivateCluster}. */
export interface PrivateClusterOptions {
  /**
   * Directory of `initdb`, `pg_ctl` and `postgres` (default: `TIDEMARK_PG_BIN`, else
   * /usr/lib/postgresql/15/bin, else the newest /usr/lib/postgresql/<version>/bin).
   */
  binDir?: string;
  /** Extra server settings (`-c name=value`); fsync and synchronous_commit are always on. */
  settings?: Record<string, string | number>;
}

/** A throw-away PostgreSQL cluster for destructive tests (restarts, crashes). */
export interface PrivateCluster {
  readonly port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication, superuser). */
  readonly connectionString: string;
  /** Its data directory. */
  readonly dataDir: string;
  /**
   * Stops and starts the server. `immediate` is `pg_ctl stop -m immediate`: every backend is
   * killed without a checkpoint and the next start runs crash recovery from the WAL.
   */
  restart(options?: { mode?: 'immediate' | 'fast' }): Promise<void>;
  /** The server's log so far (crash recovery, warnings). */
  readLog(): Promise<string>;
  /** Stops the server (immediately) and removes its directory. */
  stop(): Promise<void>;
  /** Runs SQL on a fresh connection and returns the rows. */
  exec<Row extends Record<string, unknown> = Record<string, unknown>>(
    sql: string,
    values?: unknown[],
  ): Promise<Row[]>;
}

/** Finds the PostgreSQL server binaries, or explains why there are none. */
export function findPostgresBinDir(binDir?: string): string {
  const chosen = binDir ?? process.env.TIDEMARK_PG_BIN;
  if (chosen !== undefined) return chosen;
  const root = '/usr/lib/postgresql';
  if (existsSync(join(root, '15', 'bin', 'initdb'))) return join(root, '15', 'bin');
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0] === undefined)
    throw new Error(`no initdb under ${root} (install PostgreSQL or set TIDEMARK_PG_BIN)`);
  return join(root, versions[0], 'bin');
}

/** uid/gid to run the server as: the caller's, or {@link PRIVATE_CLUSTER_USER}'s when root. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = () => {
    try {
      const id = (flag: string) =>
        Number(execFileSync('id', [flag, PRIVATE_CLUSTER_USER], { stdio: 'pipe' }).toString());
      const uid = id('-u');
      const gid = id('-g');
      return { uid, gid };
    } catch {
      return undefined;
    }
  };
  const existing = lookup();
  if (existing !== undefined) return existing;
  try {
    execFileSync(
      'useradd',
      ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', PRIVATE_CLUSTER_USER],
      {
        stdio: 'pipe',
      },
    );
  } catch (error) {
    // Another process may have created it meanwhile (useradd exits 9); anything else is fatal.
    if (lookup() === undefined) throw error;
  }
  const created = lookup();
  if (created === undefined) throw new Error(`could not create the user ${PRIVATE_CLUSTER_USER}`);
  return created;
}

function run(
  file: string,
  args: string[],
  options: { user: { uid: number; gid: number } | undefined; cwd: string },
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { cwd: options.cwd, ...(options.user ?? {}), env: { ...process.env, LC_ALL: 'C' }, timeout: 60_000 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${file} ${args.join(' ')} failed: ${error.message}\n${stderr}`));
        else resolve(stdout);
      },
    );
  });
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

async function queryOnce<Row extends Record<string, unknown>>(
  connectionString: string,
  sql: string,
  values?: unknown[],
): Promise<Row[]> {
  const client = new pg.Client({ connectionString });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query<Row>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

/** Clusters still running, stopped synchronously if the process exits without stopping them. */
const running = new Map<string, () => void>();
let exitHookInstalled = false;

function stopAtExit(base: string, stop: () => void): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const stopOne of running.values()) stopOne();
    });
  }
  running.set(base, stop);
}

/**
 * Creates a PostgreSQL cluster in a fresh temp directory (`initdb`, trust authentication, C
 * locale) and starts it on a free port of 127.0.0.1, with `fsync` and `synchronous_commit` on.
 * Run as root, the server runs as the system user {@link PRIVATE_CLUSTER_USER} (created with
 * `useradd` if missing). Always {@link PrivateCluster.stop} it.
 */
export async function startPrivateCluster(options: PrivateClusterOptions = {}): Promise<PrivateCluster> {
  const bin = findPostgresBinDir(options.binDir);
  const user = serverUser();
  const base = await fsp.mkdtemp(join(tmpdir(), 'tidemark-pg-'));
  const dataDir = join(base, 'data');
  const log = join(base, 'server.log');
  const exec = (file: string, args: string[]) => run(join(bin, file), args, { user, cwd: base });
  const port = await freePort();
  const serverArgs = Object.entries({
    listen_addresses: '127.0.0.1',
    port,
    unix_socket_directories: base,
    shared_buffers: '16MB',
    max_connections: 40,
    ...options.settings,
    fsync: 'on',
    synchronous_commit: 'on',
  })
    .map(([name, value]) => `-c ${name}=${value}`)
    .join(' ');
  const start = () => exec('pg_ctl', ['start', '-D', dataDir, '-w', '-t', '60', '-l', log, '-o', serverArgs]);
  const stopServer = (mode: 'immediate' | 'fast') =>
    exec('pg_ctl', ['stop', '-D', dataDir, '-w', '-t', '60', '-m', mode]);
  try {
    if (user !== undefined) await fsp.chown(base, user.uid, user.gid);
    // initdb's own fsync of the template files only guards against an OS crash, which no test causes.
    await exec('initdb', [
      '-D',
      dataDir,
      '-U',
      'postgres',
      '--auth=trust',
      '-E',
      'UTF8',
      '--locale=C',
      '--no-sync',
    ]);
    await start();
  } catch (error) {
    const tail = await fsp.readFile(log, 'utf8').catch(() => '');
    await fsp.rm(base, { recursive: true, force: true });
    throw new Error(`${(error as Error).message}\nserver log:\n${tail.slice(-2000)}`);
  }
  stopAtExit(base, () => {
    try {
      execFileSync(join(bin, 'pg_ctl'), ['stop', '-D', dataDir, '-m', 'immediate'], {
        ...(user ?? {}),
        stdio: 'ignore',
      });
    } catch {
      // Best effort at exit: the server may already be down.
    }
  });
  const connectionString = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    port,
    connectionString,
    dataDir,
    async restart({ mode = 'immediate' } = {}) {
      await stopServer(mode);
      await start();
    },
    readLog: () => fsp.readFile(log, 'utf8'),
    async stop() {
      running.delete(base);
      await stopServer('immediate').catch(() => undefined);
      await fsp.rm(base, { recursive: true, force: true });
    },
    exec: (sql, values) => queryOnce(connectionString, sql, values),
  };
}
