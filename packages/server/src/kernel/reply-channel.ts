/**
 * The worker's reply channel (its fd 4): a Unix socket pair the gateway makes itself, so that its
 * end reads with `onread` into the buffers the frame decoder chooses. Node's own stdio pipes
 * (socket pairs too) read into a fresh 64 KiB Buffer each time; during a 1 GiB read those reads
 * were a gigabyte of short-lived buffers, and the old-space GCs they forced were the largest
 * remaining cost in the gateway's profile. Read in place, a chunk's body lands in its pooled
 * buffer with no copy in the gateway at all.
 *
 * The pair is made by listening in a fresh private folder (mode 0700: only this user can
 * connect), connecting once, and closing the listener and the folder as soon as it is accepted.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface ReplyChannel {
  /** The end the worker writes to: passed in its stdio, then closed here once it is spawned. */
  workerEnd: net.Socket;
  /** The end the gateway reads; emits `close` once the worker's end is closed. */
  gatewayEnd: net.Socket;
}

/** Where the next read lands (`target`) and what to do with the `n` bytes it got (`onRead`). */
export interface ReadInPlace {
  target: () => Buffer;
  onRead: (n: number) => void;
}

/** Opens a reply channel whose gateway end reads in place. */
export async function openReplyChannel(reader: ReadInPlace): Promise<ReplyChannel> {
  const dir = await mkdtemp(path.join(tmpdir(), 'portico-reply-'));
  const address = path.join(dir, 's');
  const server = net.createServer({ pauseOnConnect: true });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(address, resolve);
    });
    const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
    const onread = {
      buffer: reader.target,
      callback: (n: number) => {
        reader.onRead(n);
        return true; // keep reading: the worker's pace is bounded by credit, not by this socket
      },
    };
    const gatewayEnd = net.connect({ path: address, onread });
    await new Promise<void>((resolve, reject) => {
      gatewayEnd.once('connect', resolve);
      gatewayEnd.once('error', reject);
    });
    return { workerEnd: await accepted, gatewayEnd };
  } finally {
    server.close();
    await rm(dir, { recursive: true, force: true });
  }
}
