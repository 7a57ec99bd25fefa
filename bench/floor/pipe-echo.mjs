// A Node<->Python pipe echo with the bridge's framing (pipe_echo.py answers each frame with
// itself, in order), as a floor's one worker round trip: `roundTrip(header, padTo)` sends a frame
// whose JSON header is `header` (padded with spaces to `padTo` bytes) and resolves with the echoed
// header's bytes; any number may be in flight. `pid` is the Python process; `stop()` ends it.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export function startPipeEcho() {
  const child = spawn('python3', [path.join(path.dirname(fileURLToPath(import.meta.url)), 'pipe_echo.py')], { stdio: ['ignore', 'inherit', 'inherit', 'pipe', 'pipe'] });
  const [toPython, fromPython] = [child.stdio[3], child.stdio[4]];
  const waiting = [];
  let held = Buffer.alloc(0);
  fromPython.on('data', (chunk) => {
    held = held.length ? Buffer.concat([held, chunk]) : chunk;
    while (held.length >= 8) {
      const size = 8 + held.readUInt32BE(0) + held.readUInt32BE(4);
      if (held.length < size) break;
      const header = held.subarray(8, size);
      held = held.subarray(size);
      waiting.shift()(header);
    }
  });
  const roundTrip = (header, padTo = 0) =>
    new Promise((resolve) => {
      const bytes = Buffer.from(JSON.stringify(header).padEnd(padTo));
      const prefix = Buffer.alloc(8);
      prefix.writeUInt32BE(bytes.length, 0);
      waiting.push(resolve);
      toPython.write(Buffer.concat([prefix, bytes]));
    });
  return { roundTrip, child, pid: child.pid, stop: () => child.kill('SIGTERM') };
}
