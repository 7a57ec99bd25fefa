#!/usr/bin/env node
// portico-lab: installs the prebuilt JupyterLab extension without pip (see README.md).
// The code is compiled from src/installer/ by `npm run build`.
import { existsSync } from 'node:fs';

const cli = new URL('../lib/installer/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('portico-lab: not built yet; run `npm run build -w packages/labextension` (or `npm run build` at the repository root)\n');
  process.exit(1);
}
const { main } = await import(cli.href);
process.exitCode = main(process.argv.slice(2));
