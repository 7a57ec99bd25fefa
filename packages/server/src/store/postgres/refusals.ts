/**
 * What to do when PostgreSQL cannot be reached or refuses the connection: each case a driver
 * error stands for (no server on the socket or port, no user named, no such role or database, a
 * wrong password, no pg_hba.conf entry) becomes one sentence that says what happened and how to
 * fix it, with the URL's password masked. The store answers them as `store_unavailable`.
 */
import { userInfo } from 'node:os';

/** The socket folder, host and port, user and database a connection string names (libpq's defaults filled in as pg fills them). */
function partsOf(url: string): { socket: string | undefined; host: string; port: string; user: string; database: string } {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    // keep the defaults
  }
  const hostParam = parsed?.searchParams.get('host') ?? undefined;
  const host = hostParam ?? (parsed?.hostname || 'localhost');
  const user = decodeURIComponent(parsed?.username ?? '') || process.env.USER || '';
  return {
    socket: host.startsWith('/') ? host : undefined,
    host,
    port: parsed?.port || '5432',
    user,
    database: decodeURIComponent(parsed?.pathname.slice(1) ?? '') || user,
  };
}

/** Where the project's own cluster comes from (cli/db.ts). */
const OWN_CLUSTER = '`portico db start --project P` starts a PostgreSQL of the project\'s own and prints the URL to pass';

/**
 * The explanation of a driver error that means "no connection to this database", or undefined
 * for any other error (a failing statement, a lost connection mid-query).
 */
export function connectionRefusal(err: { code?: string; message?: string }, url: string): string | undefined {
  const { code, message = '' } = err;
  const where = partsOf(url);
  if (code === 'ENOENT' && where.socket) {
    return (
      `No PostgreSQL server listens in the socket folder ${where.socket}: is it running? ` +
      `Debian's starts with \`service postgresql start\` (as root; a container does not start it by itself), or ${OWN_CLUSTER}.`
    );
  }
  if (code === 'ECONNREFUSED') {
    return `No PostgreSQL server accepts connections at ${where.host}:${where.port}: is it running, and on that port? Or ${OWN_CLUSTER}.`;
  }
  if (/no PostgreSQL user name specified/i.test(message)) {
    return (
      'The URL names no user, and there is no $USER to default to: name the user in the URL, ' +
      `as in postgres://USER@localhost/${where.database || 'DATABASE'}${where.socket ? `?host=${where.socket}` : ''} (${OWN_CLUSTER}, user included).`
    );
  }
  const role = /role "(.*)" does not exist/.exec(message)?.[1];
  if (role !== undefined) {
    return (
      `PostgreSQL has no user (role) '${role}': name an existing one in the URL, or create it as the server's superuser ` +
      `(on Debian: runuser -u postgres -- createuser --createdb ${role}).`
    );
  }
  if (code === '3D000') {
    const database = /database "(.*)" does not exist/.exec(message)?.[1] ?? where.database;
    return `PostgreSQL has no database '${database}': create it (createdb${where.socket ? ` -h ${where.socket}` : ` -h ${where.host} -p ${where.port}`} -U ${where.user} ${database}), or name one that exists in the URL.`;
  }
  if (code === '28P01') return `PostgreSQL refused the password of user '${where.user}': check the password in the URL (postgres://USER:PASSWORD@HOST/DATABASE).`;
  if (/no pg_hba\.conf entry/.test(message)) {
    return `PostgreSQL admits no connection of user '${where.user}' to database '${where.database}' from here (${message}): add a line for it to its pg_hba.conf, or connect through its unix socket (?host=/var/run/postgresql on Debian).`;
  }
  if (/Peer authentication failed/i.test(message)) {
    const os = userInfo().username;
    return (
      `The server admits a socket connection only as the database user named like the OS user making it (peer authentication), and '${where.user}' is not ${os}: ` +
      `name ${os} in the URL, after creating that role (on Debian: runuser -u postgres -- createuser --createdb ${os}), or ${OWN_CLUSTER}.`
    );
  }
  if (code?.startsWith('28')) return `PostgreSQL refused user '${where.user}' (${message}): check the user and password in the URL.`;
  return undefined;
}
