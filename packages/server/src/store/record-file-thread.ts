/**
 * The thread that writes the record files of new interfaces (files.ts, writeNewRecordFile). Each
 * file-system step of Node's asynchronous API is a hand-off to its thread pool and back, and a
 * record file takes several (make the folder, open, write, close); each wakes a pool thread and
 * then the event loop, and on a busy gateway those wake-ups cost more than the writes. This
 * thread takes the files of every create waiting at the time in one message, makes each with
 * blocking calls, and answers with one message: the event loop never waits on the disk, and a
 * batch costs two hand-offs.
 *
 * One batch at a time (files that arrive meanwhile form the next). Once a batch has been out
 * longer than LIMITS.recordFileLagMs on storage where the thread's files take long
 * (LIMITS.recordFileSlowMs each, as its last batch measured them), or longer than
 * LIMITS.recordFileStuckMs on any, a file is left to the caller, which writes it the reference
 * way (files.ts, writeRecordFile) on Node's thread pool: on storage where each step waits long,
 * one thread falls behind the pool's parallel steps. On a fast disk a batch out long waited for
 * a busy CPU, not the disk, and the pool would cost that CPU more (two hand-offs per step). The thread starts with the second record
 * file a process writes (it takes about 10 MB, and starting takes tens of milliseconds, during
 * which files go the reference way) and keeps the process alive only while a batch is out. Should
 * it fail or exit, the files it had go the reference way too, as every file after.
 */
import { Worker } from 'node:worker_threads';
import { LIMITS } from '../config/constants.js';

/**
 * What became of a file: `true` written; `false` when the folder or the file was there already, or
 * the folder's parent was not, or the thread could not take it (cases the caller leaves to the
 * reference way); or the error of a step that failed otherwise (what the file had received is
 * removed again).
 */
export type NewFileOutcome = boolean | { code: string | undefined; message: string };

// CommonJS run from a string: the thread then needs no file of its own beside the compiled one
// (the tests run this module from its TypeScript source). Messages are flat lists of strings (a
// folder, its file, the text, then the next folder…) and the answers one outcome per file, then
// the batch's time per file: the cheapest to pass between threads.
const THREAD_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { closeSync, mkdirSync, openSync, unlinkSync, writeSync } = require('node:fs');
const failed = (err) => ({ code: err && err.code, message: String(err && err.message) });
function make(dir, file, text) {
  try {
    mkdirSync(dir);
  } catch (err) {
    return err.code === 'EEXIST' || err.code === 'ENOENT' ? false : failed(err);
  }
  let fd;
  try {
    fd = openSync(file, 'wx');
  } catch (err) {
    return err.code === 'EEXIST' ? false : failed(err);
  }
  try {
    const data = Buffer.from(text);
    for (let at = 0; at < data.length; ) at += writeSync(fd, data, at);
    closeSync(fd);
    return true;
  } catch (err) {
    try { closeSync(fd); } catch {}
    try { unlinkSync(file); } catch {}
    return failed(err);
  }
}
parentPort.on('message', (files) => {
  const outcomes = [];
  const started = performance.now();
  for (let i = 0; i < files.length; i += 3) outcomes.push(make(files[i], files[i + 1], files[i + 2]));
  // Last: the time per file (ms), for the caller to tell slow storage from a busy CPU.
  outcomes.push((performance.now() - started) / outcomes.length);
  parentPort.postMessage(outcomes);
});
`;

type Settle = (outcome: NewFileOutcome) => void;

let thread: Worker | undefined;
/** Whether the thread is up: until it is, files go the reference way. */
let online = false;
/** The record files asked for so far, while no thread was up. */
let asked = 0;
/** Set once a thread failed or exited: files go the reference way from then on. */
let gone = false;
/** The files waiting (three strings each) and who waits for each. */
let queued: string[] = [];
let waiting: Settle[] = [];
/** Who waits for the batch the thread has, and since when (performance.now()). */
let batch: Settle[] | undefined;
let sentAt = 0;
/** The thread's time per file in its last batch (ms): whether this storage is slow (LIMITS.recordFileSlowMs). */
let perFileMs = 0;
let scheduled = false;

/**
 * Makes the record file `file` in the new folder `dir` on the thread (see NewFileOutcome). Until
 * the thread is up, and while it lags on slow storage (LIMITS.recordFileLagMs, recordFileSlowMs) or is
 * stuck (recordFileStuckMs), answers `false` at once. The first file asked for starts nothing (a one-off `portico get` needs no thread); the
 * second starts the thread.
 */
export function makeOnThread(dir: string, file: string, text: string): Promise<NewFileOutcome> {
  if (!online) {
    if (++asked >= 2 && !thread && !gone) thread = start();
    return Promise.resolve(false);
  }
  if (batch) {
    const out = performance.now() - sentAt;
    if (out > LIMITS.recordFileStuckMs || (out > LIMITS.recordFileLagMs && perFileMs > LIMITS.recordFileSlowMs)) return Promise.resolve(false);
  }
  return new Promise((settle) => {
    queued.push(dir, file, text);
    waiting.push(settle);
    // Sent once this turn of the event loop is done: the creates whose journal flush just
    // completed all reach this point in the same turn, and share one message.
    if (!batch && !scheduled) {
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        if (!batch) send();
      });
    }
  });
}

/** Starts the thread unless it runs; resolves once it is up (true), or false if it could not start. */
export function threadReady(): Promise<boolean> {
  if (online) return Promise.resolve(true);
  if (gone) return Promise.resolve(false);
  const worker = (thread ??= start());
  return new Promise((resolve) => {
    worker.once('online', () => resolve(true));
    worker.once('exit', () => resolve(false));
  });
}

function send(): void {
  if (waiting.length === 0 || !thread) {
    batch = undefined;
    thread?.unref();
    return;
  }
  const files = queued;
  batch = waiting;
  queued = [];
  waiting = [];
  sentAt = performance.now();
  thread.ref();
  thread.postMessage(files);
}

function start(): Worker {
  // No flags of the gateway's own (--inspect, --cpu-prof, --import): the thread runs this source alone.
  const worker = new Worker(THREAD_SOURCE, { eval: true, execArgv: [] });
  worker.unref();
  worker.once('online', () => {
    if (thread === worker) online = true;
    // Node refs a worker again as it comes online: without this, a thread started and never sent
    // a batch keeps the process alive after the gateway closed (until a garbage collection).
    if (!batch) worker.unref();
  });
  worker.on('message', (outcomes: NewFileOutcome[]) => {
    perFileMs = Number(outcomes.pop());
    const answered = batch ?? [];
    answered.forEach((settle, i) => settle(outcomes[i] ?? false));
    send();
  });
  // Lost: what it had, what waited for it and every file after go the reference way.
  const lost = () => {
    if (thread !== worker) return;
    thread = undefined;
    online = false;
    gone = true;
    const unanswered = [...(batch ?? []), ...waiting];
    batch = undefined;
    queued = [];
    waiting = [];
    for (const settle of unanswered) settle(false);
  };
  worker.on('error', lost);
  worker.on('exit', lost);
  return worker;
}
