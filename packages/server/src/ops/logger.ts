/**
 * Structured logs (pino): JSON lines on stderr when it is not a terminal (for a log collector),
 * readable lines when it is. One access line per HTTP request and per socket comes from http/ and
 * ws/; everything else the gateway has to say goes through the same logger. Credentials never
 * reach a line: nothing logs headers or tokens, and these paths are redacted besides.
 */
import { pino, type ChildLoggerOptions, type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const REDACT = ['authorization', 'token', 'api_token', 'source_token', '*.authorization', '*.token', 'headers.authorization', 'headers["x-service-source-token"]'];

/**
 * The gateway's logger at `level`. `destination` (tests) takes JSON lines; without one, stderr
 * gets readable lines on a terminal and JSON otherwise.
 */
export function createLogger(level: LogLevel = 'info', destination?: DestinationStream): Logger {
  const options = { level, base: { pid: process.pid }, redact: { paths: REDACT, censor: '[redacted]' } };
  if (destination) return pino(options, destination);
  if (process.stderr.isTTY) return pino(options, pretty({ destination: 2, sync: true, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l' }));
  return pino(options, pino.destination({ dest: 2, sync: true }));
}

/** The levels a plain gateway line is written at. */
export type LineLevel = 'error' | 'warn' | 'info';

/**
 * Where plain gateway lines go (worker output, failures, notices): one line and its level, info
 * unless said otherwise. Internal errors and Python tracebacks are `error`.
 */
export type LogLine = (line: string, level?: LineLevel) => void;

/** Plain lines onto `logger`, each at its level. */
export function lineLogger(logger: Logger): LogLine {
  return function logLine(line, level = 'info') {
    logger[level](line);
  };
}

let background: LogLine | undefined;

/**
 * Where code that runs on its own schedule and holds no logger of its own (the embedded index's
 * background checkpoint) writes: the lines of the gateway started last in this process (the one
 * gateway of a deployment), or JSON lines on stderr before any gateway started.
 */
export function logInBackground(line: string, level: LineLevel = 'info'): void {
  (background ??= lineLogger(createLogger()))(line, level);
}

/** Makes `log` the destination of logInBackground (a gateway calls this as it starts). */
export function setBackgroundLog(log: LogLine): void {
  background = log;
}

/**
 * A child of `logger` (no bindings, `options` as for `logger.child`) whose lines are held until
 * `flush()` writes them to the logger's destination at once: one system call for many lines
 * rather than one each. A destination that takes each line's metadata (pino.multistream) is
 * written line by line as before.
 */
export function batchingChild(logger: Logger, options: ChildLoggerOptions): { logger: Logger; flush(): void } {
  const child = logger.child({}, options);
  type Streams = Record<symbol, DestinationStream & Record<symbol, unknown>>;
  const destination = (logger as unknown as Streams)[pino.symbols.streamSym]!;
  if (destination[pino.symbols.needsMetadataGsym] === true) return { logger: child, flush() {} };
  let held = '';
  (child as unknown as Streams)[pino.symbols.streamSym] = { write: (line: string) => void (held += line) };
  return {
    logger: child,
    flush() {
      if (held === '') return;
      const lines = held;
      held = '';
      destination.write(lines);
    },
  };
}
