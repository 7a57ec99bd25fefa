/**
 * The README and the guide run as written.
 *
 * Every ```sh block of README.md and of the guide's pages (docs/, in the order of the site's
 * sidebar) runs here, in page order, with `bash -eu` from the repository root (as the pages say to
 * run them), against a real gateway started as a user starts one
 * (`portico serve` on a copy of examples/demo). Blocks set the variables they use themselves
 * (`UUID=$(curl …)`); an unset one fails the block. Each gateway here listens on a port of its
 * own: the blocks' `localhost:8000` and `127.0.0.1:8000` are replaced with its address, and
 * nothing else in them is changed.
 *
 * What a page shows a command prints is checked: the `# →` lines after a run of commands are
 * its whole stdout, line by line, `…` standing for any text (a uuid, a time). A command that
 * prints something the page does not show fails the block, naming the page, its line and heading,
 * so every example shows what it gets.
 *
 * A block that cannot run here says why in the page's source, in a comment right above it:
 * `<!-- readme-test: skip (why) -->`; the skipped blocks are listed below, so a new block runs
 * unless someone says why not. The same comment can ask for `serve FLAGS` (a gateway started
 * with them), `env NAME=VALUE` (given to that gateway and to the block), `slurm` (its runs go to a
 * throwaway Slurm cluster), `portico --help` (the block is that command's output) or `frames`
 * (`→` frames sent on /v1/interfaces/ws, `←` frames that must come back in that order).
 *
 * The command line as the pages show it is checked too: `portico --help` (docs/reference/cli.md),
 * the `portico serve` options table (docs/operating/options.md) against `portico serve --help`, and
 * the flags of every `portico …` and `npm start -- …` line (in blocks and inline code) against the
 * help of their command. test/docs-site.test.ts builds the site from the same pages.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanup, Client, ROOT, tempProject } from './helpers.js';
import { killGroup, launch, type Launched } from './support/processes.js';
import { anchor, flagsOf, groups, parsePage, porticoCommands, readReadme, shows, type Block, type Directive } from './support/readme.js';
import { slurmCluster, type SlurmCluster } from './support/slurm.js';

const README = readReadme(path.join(ROOT, 'README.md'));
/** The guide's pages in the order of its sidebar (docs/.vitepress/config.mts). */
const GUIDE = [...readFileSync(path.join(ROOT, 'docs/.vitepress/config.mts'), 'utf8').matchAll(/link: '\/([^']+)'/g)].map((m) => `docs/${m[1]}.md`);
const PAGES = [README, ...GUIDE.map((file) => readReadme(path.join(ROOT, file), file))];
const page = (file: string) => PAGES.find((p) => p.file === file)!;
const BLOCKS = PAGES.flatMap((p) => p.blocks);
const BIN = path.join(ROOT, 'packages/server/bin/portico.js');
const SHELL = BLOCKS.filter((b) => b.lang === 'sh');
const RUN = SHELL.filter((b) => !b.directive?.skip);

/** The shell blocks that do not run here, by page and the heading they are under (page order); each says why. */
const SKIPPED = [
  'README.md (Set up)',
  'docs/clients/rest.md (Streams over plain HTTP)',
  'docs/clients/jupyterlab.md (JupyterLab)',
  'docs/running/slurm.md (On a Slurm cluster)',
  'docs/running/slurm-workers.md (Starting the gateway)',
  'docs/running/slurm-workers.md (Starting the gateway)',
  'docs/operating/postgresql.md (PostgreSQL: one index for many gateways)',
  'docs/operating/security.md (OpenID Connect)',
  'docs/reference/cli.md (Command line)',
];

/** The environment without the PORTICO_* variables the test run itself may have. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('PORTICO_')) env[name] = value;
  return { ...env, ...extra };
}

/** `portico ARGS` as a user runs it: its stdout, stderr and exit status. */
async function portico(args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return promisify(execFile)(process.execPath, [BIN, ...args], { cwd: ROOT, env: cleanEnv() }).then(
    ({ stdout, stderr }) => ({ stdout, stderr, code: 0 }),
    (err: { stdout: string; stderr: string; code: number }) => ({ stdout: err.stdout, stderr: err.stderr, code: err.code }),
  );
}

// ------------------------------------------------------------------------------------ gateways

interface Gateway {
  url: string;
  env: Record<string, string>;
  /** The api token it was started with, if any. */
  token: string | undefined;
  process: Launched;
}

const gateways = new Map<string, Promise<Gateway>>();
let cluster: Promise<SlurmCluster> | undefined;

/** The gateway a block's comment asks for (one per distinct request, started on first use). */
function gatewayFor(directive: Directive | null): Promise<Gateway> {
  const d = directive ?? { serve: [], env: {}, slurm: false, help: false, frames: false };
  const key = JSON.stringify([d.serve, d.env, d.slurm]);
  let started = gateways.get(key);
  if (!started) {
    started = (async () => {
      const project = await tempProject();
      const slurmEnv = d.slurm ? (await (cluster ??= slurmCluster())).env : {};
      const flags = d.serve.map((flag) => flag.replace(/\$([A-Za-z_][A-Za-z0-9_]*)/g, (_, name: string) => d.env[name] ?? ''));
      const launched = launch(process.execPath, [BIN, 'serve', project, '--port', '0', ...flags], { cwd: ROOT, env: cleanEnv({ ...d.env, ...slurmEnv }) });
      try {
        await launched.printed(/Stop\s/);
      } catch (err) {
        killGroup(launched.group);
        throw err;
      }
      const url = /API\s+(http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(launched.out())![1]!;
      const token = flags.includes('--api-token') ? flags[flags.indexOf('--api-token') + 1] : d.env.PORTICO_API_TOKEN;
      return { url, env: d.env, token, process: launched };
    })();
    gateways.set(key, started);
  }
  return started;
}

/** Stops a gateway once the runs the blocks dispatched on it have ended (they outlive it otherwise). */
async function stopGateway(g: Gateway): Promise<void> {
  const headers: Record<string, string> = g.token ? { authorization: `Bearer ${g.token}` } : {};
  for (;;) {
    const runs = (await (await fetch(`${g.url}/v1/executions`, { headers })).json()) as Array<{ status: string; is_active: boolean }>;
    if (runs.every((r) => ['finished', 'failed', 'interrupted'].includes(r.status) && !r.is_active)) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  g.process.child.kill('SIGTERM');
  expect(await g.process.exited, g.process.err()).toBe(0);
}

afterAll(async () => {
  try {
    for (const started of gateways.values()) {
      const g = await started.catch(() => null);
      if (!g) continue;
      try {
        await stopGateway(g);
      } finally {
        killGroup(g.process.group);
      }
    }
  } finally {
    await cleanup();
    if (cluster) await (await cluster).stop();
  }
}, 120_000);

// ------------------------------------------------------------------------------- running blocks

const where = (block: Block, index = 0) => `${block.file}:${block.line + 1 + index} (${block.section})`;

/**
 * Commands this test never runs, whatever a page says: they change the machine (installs, links,
 * a JupyterLab's extensions), run until stopped (a gateway, JupyterLab) or run the whole suite. A
 * block holding one must say `skip (why)`; one that does not fails here without running.
 */
const NEVER_RUN = /(^|[\s;&|(])(npm (install|ci|link|start|test)\b|apt(-get)? |sudo |pip3? install|python3? -m (venv|pip)|jupyter lab\b|(npx )?portico(-lab)? (serve|install|uninstall|db start)\b)/m;

/** Runs a shell block as written against `g`; checks every output its page shows. */
async function runShellBlock(block: Block, g: Gateway): Promise<void> {
  const address = g.url.replace(/^http:\/\//, '');
  const local = (text: string) => text.replaceAll('localhost:8000', address).replaceAll('127.0.0.1:8000', address);
  const runs = groups(block);
  // The block's lines as written, with a marker printed after each run of commands so that each
  // run's output can be told apart; the ERR trap names the script line, mapped to the page's.
  const script = [`trap 'echo "script line $LINENO: exit status $? of: $BASH_COMMAND" >&2' ERR`];
  const pageLine: Array<number | null> = [null];
  runs.forEach((run, n) => {
    for (const index of run.lines) {
      script.push(local(block.lines[index]!));
      pageLine.push(block.line + 1 + index);
    }
    script.push(`printf '\\n\\036%d\\036\\n' ${n}`);
    pageLine.push(null);
  });
  const child = spawn('bash', ['-eu', '-c', script.join('\n')], { cwd: ROOT, env: cleanEnv(g.env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  if (code !== 0) {
    const failed = /(?:script line|bash: line) (\d+)/.exec(stderr);
    const line = failed ? pageLine[Number(failed[1]) - 1] : null;
    throw new Error(`${where(block)}: the block failed (exit status ${code})${line ? ` at ${block.file}:${line}` : ''}\n--- stderr\n${stderr}\n--- stdout\n${stdout}`);
  }
  const outputs = stdout.split(/\n\x1e\d+\x1e\n/).map((o) => o.replace(/\n+$/, ''));
  runs.forEach((run, n) => {
    const actual = outputs[n] ?? '';
    const at = where(block, run.lines[0] ?? 0);
    if (run.expected === null) {
      expect(actual, `${at}: prints this, which the page does not show (add # → lines)`).toBe('');
      return;
    }
    const pattern = local(run.expected.join('\n'));
    expect(shows(pattern, actual), `${at}: the page shows\n${pattern}\nbut it printed\n${actual}\n(stderr: ${stderr})`).toBe(true);
  });
}

/** A `frames` block: each `→` frame is sent, each `←` frame must come back after the previous one. */
async function runFramesBlock(block: Block, g: Gateway): Promise<void> {
  const client = await Client.open(g.url);
  let next = 0;
  try {
    for (const [index, line] of block.lines.entries()) {
      if (line.startsWith('→ ')) client.sendRaw(line.slice(2));
      else if (line.startsWith('← ')) {
        const pattern = line.slice(2);
        const frame = await client.waitFor((f) => client.frames.indexOf(f) >= next && shows(pattern, JSON.stringify(f)), 30_000).catch(() => {
          throw new Error(`${where(block, index)}: no frame like ${pattern}; got ${JSON.stringify(client.frames.slice(next))}`);
        });
        next = client.frames.indexOf(frame) + 1;
      } else expect(line, `${where(block, index)}: a frames block holds → and ← lines, and … alone`).toBe('…');
    }
  } finally {
    client.close();
  }
}

// ------------------------------------------------------------------------------------------ tests

describe('the blocks of the README and the guide', () => {
  it('every sh block runs here unless its page says why not; the skipped ones are these', () => {
    const skipped = SHELL.filter((b) => b.directive?.skip);
    for (const block of skipped) console.log(`skipped: ${where(block)}: ${block.directive!.skip}`);
    expect(skipped.map((b) => `${b.file} (${b.section})`)).toEqual(SKIPPED);
    expect(RUN.length).toBeGreaterThanOrEqual(10);
  });

  it('every readme-test comment stands right above a block it applies to', () => {
    for (const p of PAGES) {
      const used = new Set(p.blocks.filter((b) => b.directive).map((b) => b.line));
      p.lines.forEach((line, i) => {
        if (!/^<!--\s*readme-test:/.test(line.trim())) return;
        let next = i + 1;
        while (p.lines[next]?.trim() === '') next++;
        expect(used.has(next + 1), `${p.file}:${i + 1}: a readme-test comment with no block right below it`).toBe(true);
      });
    }
  });

  it('a block whose output no longer matches fails, naming its page, line and heading', async () => {
    // A page as a docs edit might leave it: the command still runs, the output shown is stale.
    const stale = parsePage(['# A page', '', '## Counting', '', '```sh', 'echo 41', '# → 42', '```', ''].join('\n'), 'docs/stale.md');
    const g = await gatewayFor(null);
    await expect(runShellBlock(stale.blocks[0]!, g)).rejects.toThrow(/^docs\/stale\.md:6 \(Counting\): the page shows\n42\nbut it printed\n41/);
    const failing = parsePage(['# A page', '', '## Failing', '', '```sh', 'true', 'false', '```', ''].join('\n'), 'docs/failing.md');
    await expect(runShellBlock(failing.blocks[0]!, g)).rejects.toThrow(/^docs\/failing\.md:6 \(Failing\): the block failed \(exit status 1\) at docs\/failing\.md:7/);
  });

  it.each(RUN.map((block) => [where(block), block] as const))('%s runs as written and prints what its page shows', { timeout: 240_000 }, async (_name, block) => {
    const unsafe = NEVER_RUN.exec(block.lines.filter((l) => !l.trimStart().startsWith('#')).join('\n'));
    expect(unsafe?.[2], `${where(block)}: a command this test does not run (mark the block <!-- readme-test: skip (why) -->)`).toBeUndefined();
    const g = await gatewayFor(block.directive);
    await runShellBlock(block, g);
  });

  it.each(BLOCKS.filter((b) => b.directive?.frames).map((block) => [where(block), block] as const))(
    '%s: the frames it shows are the ones a socket gets',
    async (_name, block) => {
      await runFramesBlock(block, await gatewayFor(block.directive));
    },
  );
});

describe('the command line as the pages show it', () => {
  const helps = new Map<string, Promise<string>>();
  const help = (command: string) => {
    let text = helps.get(command);
    if (!text) {
      text = portico([command, '--help']).then(({ stdout, code }) => {
        expect(code, `portico ${command} --help`).toBe(0);
        return stdout;
      });
      helps.set(command, text);
    }
    return text;
  };

  it('the Command line block is what portico --help prints', async () => {
    const blocks = BLOCKS.filter((b) => b.directive?.help);
    expect(blocks).toHaveLength(1);
    const printed = await portico(['--help']);
    expect(printed.code).toBe(0);
    expect(blocks[0]!.lines.join('\n')).toBe(printed.stdout.replace(/\n+$/, ''));
  });

  it('every portico and npm start line, in blocks and in inline code, uses flags its command’s --help lists', async () => {
    const texts = [
      ...SHELL.map((b) => ({ text: b.lines.join('\n'), at: where(b) })),
      ...PAGES.flatMap((p) => [...p.text.matchAll(/`([^`\n]+)`/g)].map((m) => ({ text: m[1]!, at: `${p.file} inline \`${m[1]}\`` }))),
    ];
    let checked = 0;
    for (const { text, at } of texts) {
      for (const [command, rest] of porticoCommands(text)) {
        const options = await help(command);
        for (const flag of flagsOf(rest)) {
          expect(options, `${at}: portico ${command} has no ${flag}`).toMatch(new RegExp(`^\\s+${flag}\\b`, 'm'));
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(20);
  });

  it('the `portico serve` options table says what portico serve --help says: every flag, its variable and its default', async () => {
    const printed = await help('serve');
    // "  --port  Port to listen on … [default: 8000; PORTICO_PORT]"
    const options = new Map<string, { defaultValue: string | null; env: string | null }>();
    for (const m of printed.matchAll(/^ {2}(--[a-z-]+)\s+.*?(?:\[(?:default: (.*?))?;? ?(PORTICO_[A-Z_]+)?\])?$/gm)) {
      if (m[1] !== '--help') options.set(m[1]!, { defaultValue: m[2] ?? null, env: m[3] ?? null });
    }
    const options_page = page('docs/operating/options.md');
    expect(options_page.lines[0]).toBe('# `portico serve` options');
    const table = options_page.lines;
    const rows = table.slice(table.findIndex((l) => l.startsWith('|---')) + 1).filter((l) => l.startsWith('| '));
    const listed = new Set<string>();
    for (const row of rows) {
      const [flagCell, envCell, defaultCell] = row.split(' | ').map((c) => c.replace(/^\| /, ''));
      const flags = [...flagCell!.matchAll(/`(--[a-z-]+)`/g)].map((m) => m[1]!);
      const envs = [...envCell!.matchAll(/`(PORTICO_[A-Z_*]+)`/g)].map((m) => m[1]!);
      if (flags.length === 0) {
        // (positional): the project, read from its variable
        for (const env of envs) expect(printed, `${row}`).toContain(env);
        continue;
      }
      const [first, ...others] = flags;
      expect(options.has(first!), `docs/operating/options.md row ${first}: portico serve --help has no such option`).toBe(true);
      for (const other of others) expect(printed, `docs/operating/options.md row ${first}: ${other}`).toContain(other);
      const defaults = defaultCell!.split(', ');
      flags.forEach((flag, i) => {
        const option = options.get(flag);
        if (!option) return;
        listed.add(flag);
        const env = envs.length === flags.length ? envs[i]! : envs[0]!;
        const envPattern = new RegExp(`^${env.replace('*', '[A-Z_]+')}$`);
        if (option.env) expect(option.env, `docs/operating/options.md row ${flag}: variable`).toMatch(envPattern);
        const readme = (defaults.length === flags.length ? defaults[i]! : defaultCell!).replace(/`/g, '');
        const help = option.defaultValue === 'false' ? 'off' : option.defaultValue;
        if (help === null) expect(readme, `docs/operating/options.md row ${flag}: default (--help names none)`).toMatch(/^(none|off)$/);
        else expect(readme.startsWith(help), `docs/operating/options.md row ${flag}: default ${readme}, portico serve --help says ${help}`).toBe(true);
      });
    }
    expect([...options.keys()].filter((flag) => !listed.has(flag)), 'options of portico serve --help the options table leaves out').toEqual([]);
  });
});

describe('the README is the front door', () => {
  const sections = README.headings.filter((h) => h.level === 2);

  it('what Portico is, set-up first, the tour next, exactly two set-up commands, then the guide; a few hundred lines at most', () => {
    expect(sections.map((h) => h.text)).toEqual(['Set up', 'A quick tour', 'The guide']);
    const setUp = SHELL.find((b) => b.file === 'README.md' && b.section === 'Set up')!;
    expect(setUp.lines.map((l) => l.replace(/\s+#.*$/, '').trim()).filter(Boolean)).toEqual(['npm install && npm start', 'npm test']);
    expect(SHELL.filter((b) => b.section === 'Set up')).toHaveLength(1);
    expect(README.lines.length).toBeLessThan(300);
  });

  it('its links lead to files that exist, and to every page of the guide', () => {
    const links = [...README.text.matchAll(/\]\(((?!https?:|#)[^)#]+)(#[^)]*)?\)/g)].map((m) => m[1]!);
    for (const link of links) expect(existsSync(path.join(ROOT, link)), `README.md links ${link}, which does not exist`).toBe(true);
    expect(GUIDE.filter((file) => !links.includes(file)), 'pages of the guide the README does not link').toEqual([]);
    for (const [, target] of README.text.matchAll(/\]\(#([^)]+)\)/g)) expect(README.headings.map((h) => anchor(h.text)), `#${target}`).toContain(target);
  });

  it('the benchmark history lives in bench/README.md; the README and the guide point there and say how to run it', () => {
    const bench = path.join(ROOT, 'bench/README.md');
    expect(existsSync(bench)).toBe(true);
    expect(readFileSync(bench, 'utf8')).toContain('bench/results/');
    expect(README.text).toContain('](bench/README.md)');
    const contributing = page('docs/contributing.md').text;
    expect(contributing.slice(contributing.indexOf('\n## Benchmarks'))).toMatch(/npm run bench[\s\S]*`bench\/README\.md`/);
    expect(README.text).not.toContain('issue-22-round');
  });
});
