#!/usr/bin/env node
// The `portico` command: runs the compiled CLI (built by `npm install` / `npm run build`).
import { main } from '../dist/cli/main.js';

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (err) => {
    // A PorticoError's operator version names what a client may not read (hosts, paths): the terminal may.
    process.stderr.write(`portico: ${err?.forOperator ?? err?.message ?? err}\n`);
    process.exitCode = 1;
  },
);
