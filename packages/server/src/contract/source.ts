/**
 * Bodies of the source API (/v1/source). Field names follow the reference server
 * (SourceListResponse, SourceFileContent, SourceWriteRequest, SourceWriteResponse, SourceMoveRequest).
 */
import { LIMITS } from '../config/constants.js';
import { z } from './zod.js';

/** A lone UTF-16 surrogate cannot be written as UTF-8; it would be replaced silently. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const RelativePath = z.string().min(1).max(4096);

/** The extensions the source API edits (source/paths.ts refuses others with 415 `not_source_file`). */
export const SOURCE_FILE_EXTENSIONS = ['.py', '.js', '.mjs', '.css', '.json', '.md', '.txt'] as const;
const anyCase = (text: string) => [...text].map((c) => (/[a-z]/.test(c) ? `[${c}${c.toUpperCase()}]` : `\\${c}`)).join('');
/** A path ending in a source extension, in any case: the rule, for the document (the 415 stays the service's). */
export const SOURCE_FILE_PATTERN = `(?:${SOURCE_FILE_EXTENSIONS.map(anyCase).join('|')})$`;
const SourcePath = RelativePath.openapi({ pattern: SOURCE_FILE_PATTERN });

const Module = z
  .string()
  .nullable()
  .describe('The dotted Python module the file defines (`pkg/__init__.py` → `pkg`); null for files that are not `.py`.');

export const SourcePathParams = z.object({ path: SourcePath.describe('Relative to the project, `/`-separated.') });

export const SourceFile = z
  .object({
    path: z.string().describe('Relative to the base directory, `/`-separated.'),
    module: Module,
    size: z.number().int().describe('Bytes.'),
    mtime_ns: z.number().int().describe('Modification time in nanoseconds since the epoch (a JSON number: exact to the microsecond).'),
  })
  .openapi('SourceFile');

export const SourceListResponse = z
  .object({
    base_dir: z.string().describe('The base directory (the bound project), absolute, symlinks resolved.'),
    files: z.array(SourceFile).describe('Editable source files, sorted by path.'),
    truncated: z.boolean().describe(`True when more than ${LIMITS.sourceListMax} files matched and the list stops there.`),
  })
  .openapi('SourceListResponse');

export const SourceFileContent = z
  .object({
    path: z.string(),
    module: Module,
    content: z.string().describe('The file, decoded as UTF-8.'),
    etag: z.string().describe('MD5 hex of the bytes, unquoted; the ETag header carries it quoted.'),
    size: z.number().int().describe('Bytes.'),
  })
  .openapi('SourceFileContent');

export const SourceWriteRequest = z
  .object({
    content: z
      .string()
      .refine((text) => !LONE_SURROGATE.test(text), 'content must be valid Unicode (no lone surrogates)')
      .describe(`The whole new file, written as UTF-8 (at most ${LIMITS.sourceFileMax} bytes).`),
  })
  .openapi('SourceWriteRequest');

export const SourceWriteResponse = z
  .object({
    path: z.string(),
    module: Module,
    etag: z.string().describe('MD5 hex of the file now on disk, unquoted; the ETag header carries it quoted.'),
    created: z.boolean().describe('True when the write created the file (status 201).'),
  })
  .openapi('SourceWriteResponse');

export const SourceMoveRequest = z
  .object({
    from: SourcePath.optional().describe('The file to move.'),
    from_path: SourcePath.optional().describe('The reference server\'s other spelling of `from`; `from` wins.'),
    to: SourcePath.describe('Where it goes; must not exist. Missing folders are created.'),
  })
  .refine((body) => body.from !== undefined || body.from_path !== undefined, { message: 'Field required', path: ['from'] })
  // The refinement above, for the document: one of the two spellings is required.
  .openapi('SourceMoveRequest', { anyOf: [{ required: ['from'] }, { required: ['from_path'] }] });
