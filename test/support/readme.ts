/**
 * README.md and the guide's pages (docs/) read as test/readme.test.ts checks them: their headings,
 * their fenced blocks with the `<!-- readme-test: … -->` comment above each, the commands of a
 * shell block with the output the page shows after them (`# →` lines), and the `…` wildcard of
 * that output.
 */
import { readFileSync } from 'node:fs';

export interface Heading {
  level: number;
  text: string;
  line: number;
}

/** What the `<!-- readme-test: … -->` comment right above a block says (parts separated by `;`). */
export interface Directive {
  /** `skip (why)`: the block is not run, for that reason (nothing else goes with it). */
  skip?: string;
  /** `serve FLAGS`: run it against a gateway started with these `portico serve` flags. */
  serve: string[];
  /** `env NAME=VALUE`: the gateway and the block both get it (as when exported before `npm start`). */
  env: Record<string, string>;
  /** `slurm`: the gateway's runs go to a throwaway Slurm cluster (test/support/slurm.ts). */
  slurm: boolean;
  /** `portico --help`: the block is exactly what `portico --help` prints. */
  help: boolean;
  /** `frames`: `→` lines are sent on /v1/interfaces/ws, `←` lines must be answered in that order. */
  frames: boolean;
}

export interface Block {
  /** The page it is in, from the repository root (`README.md`, `docs/clients/rest.md`). */
  file: string;
  lang: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The lines between the fences. */
  lines: string[];
  /** The heading the block is under (the nearest one of any level). */
  section: string;
  directive: Directive | null;
}

/** One run of commands and the output the README shows for them (`expected` null: none shown). */
export interface Group {
  /** Index (0-based, in the block) of each command line. */
  lines: number[];
  expected: string[] | null;
}

export interface Readme {
  /** The page, from the repository root. */
  file: string;
  text: string;
  lines: string[];
  headings: Heading[];
  blocks: Block[];
}

const DIRECTIVE = /^<!--\s*readme-test:\s*(.*?)\s*-->$/;

export function parseDirective(text: string, file = 'README.md'): Directive {
  const directive: Directive = { serve: [], env: {}, slurm: false, help: false, frames: false };
  // A skip is all the comment says; its reason may hold any text (a `;` too).
  const skip = /^skip \((.+)\)$/s.exec(text.trim());
  if (skip) return { ...directive, skip: skip[1]! };
  for (const part of text.split(';').map((p) => p.trim()).filter(Boolean)) {
    let match: RegExpExecArray | null;
    if ((match = /^serve (.+)$/.exec(part))) directive.serve.push(...match[1]!.split(/\s+/));
    else if ((match = /^env ([A-Za-z_][A-Za-z0-9_]*)=(\S+)$/.exec(part))) directive.env[match[1]!] = match[2]!;
    else if (part === 'slurm') directive.slurm = true;
    else if (part === 'portico --help') directive.help = true;
    else if (part === 'frames') directive.frames = true;
    else throw new Error(`${file}: a readme-test comment says '${part}', which is none of: skip (why), serve FLAGS, env NAME=VALUE, slurm, portico --help, frames`);
  }
  return directive;
}

/** A page: `path` to read it, `name` to name it (its path from the repository root). */
export function readReadme(path: string, name = 'README.md'): Readme {
  return parsePage(readFileSync(path, 'utf8'), name);
}

export function parsePage(text: string, file: string): Readme {
  const lines = text.split('\n');
  const headings: Heading[] = [];
  const blocks: Block[] = [];
  let open: { file: string; lang: string; line: number; directive: Directive | null; section: string } | null = null;
  let body: string[] = [];
  let section = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (open) {
      if (/^```\s*$/.test(line)) {
        blocks.push({ ...open, lines: body });
        open = null;
      } else body.push(line);
      continue;
    }
    const fence = /^```(\S*)\s*$/.exec(line);
    if (fence) {
      let previous = i - 1;
      while (previous >= 0 && lines[previous]!.trim() === '') previous--;
      const comment = previous >= 0 ? DIRECTIVE.exec(lines[previous]!.trim()) : null;
      open = { file, lang: fence[1]!, line: i + 1, directive: comment ? parseDirective(comment[1]!, file) : null, section };
      body = [];
      continue;
    }
    const heading = /^(#{1,6}) (.+)$/.exec(line);
    if (heading) {
      headings.push({ level: heading[1]!.length, text: heading[2]!, line: i + 1 });
      section = heading[2]!;
    }
  }
  if (open) throw new Error(`${file}: the block opened at line ${open.line} is never closed`);
  return { file, text, lines, headings, blocks };
}

const EXPECTED = /^# →(?: (.*))?$/;

/** The commands of a shell block, each run followed by the `# →` lines that show its output. */
export function groups(block: Block): Group[] {
  const found: Group[] = [];
  let current: Group = { lines: [], expected: null };
  block.lines.forEach((line, index) => {
    const expected = EXPECTED.exec(line);
    if (expected) {
      (current.expected ??= []).push(expected[1] ?? '');
      return;
    }
    if (current.expected) {
      found.push(current);
      current = { lines: [], expected: null };
    }
    current.lines.push(index);
  });
  if (current.lines.length || current.expected) found.push(current);
  return found;
}

/**
 * Whether `actual` is what `pattern` shows, `…` standing for any text (none included). Matched
 * left to right, each literal piece at its first place after the previous one: for patterns whose
 * only wildcard matches anything, that finds a match whenever there is one.
 */
export function shows(pattern: string, actual: string): boolean {
  const pieces = pattern.split('…');
  if (pieces.length === 1) return pattern === actual;
  const first = pieces[0]!;
  const last = pieces[pieces.length - 1]!;
  if (!actual.startsWith(first)) return false;
  let at = first.length;
  for (const piece of pieces.slice(1, -1)) {
    const found = actual.indexOf(piece, at);
    if (found < 0) return false;
    at = found + piece.length;
  }
  return actual.length - last.length >= at && actual.endsWith(last);
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function anchor(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/ /g, '-');
}

/** The `--flags` of a command line (`--port=8010` counts as `--port`). */
export function flagsOf(command: string): string[] {
  return [...command.matchAll(/(?:^|\s)(--[a-z][a-z0-9-]*)/g)].map((m) => m[1]!);
}

/**
 * The `portico` command lines of a text (a shell block's lines, continuation lines joined, or an
 * inline code span): `[subcommand, the rest of the line]`. `npm start -- …` is `portico serve`.
 */
export function porticoCommands(text: string): Array<[string, string]> {
  const found: Array<[string, string]> = [];
  for (const line of text.replace(/\\\n/g, ' ').split('\n')) {
    const code = line.replace(/(^|\s)#.*$/, '');
    for (const match of code.matchAll(/(?:^|[\s(;&|])(?:npx )?portico (serve|get|reindex|index|fetch|db)\b([^;&|)]*)/g)) found.push([match[1]!, match[2]!]);
    for (const match of code.matchAll(/npm start -- ([^;&|)]*)/g)) found.push(['serve', match[1]!.replace(/(^|\s)--verbose\b/, ' ')]);
  }
  return found;
}
