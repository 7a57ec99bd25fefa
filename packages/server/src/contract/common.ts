/**
 * Schemas shared by REST and WebSocket. Each is written once and feeds request validation,
 * TypeScript types, /openapi.json and /v1/protocol.
 */
import { LIMITS } from '../config/constants.js';
import { z } from './zod.js';

export const VersionItem = z.union([z.string(), z.record(z.string(), z.unknown())]);

export const Version = z
  .array(VersionItem)
  .describe("Version list applied to the Config defaults: dicts (deep-merged), '~name' / '~name(args)', 'a.b=value'.")
  .openapi('Version', { example: ['~big', { step: 2 }] });

export const JsonObject = z.record(z.string(), z.unknown());

const BooleanText = z.enum(['true', 'false', '1', '0']);
const asBoolean = (v: z.infer<typeof BooleanText>) => v === 'true' || v === '1';

/** A boolean query parameter: true/false or 1/0 (anything else is a 422). */
export const QueryBoolean = BooleanText.transform(asBoolean);

/** A boolean query parameter with a default (documented as the text it stands for). */
export function queryBoolean(fallback: boolean) {
  return BooleanText.default(fallback ? 'true' : 'false').transform(asBoolean);
}

/**
 * An integer query parameter: decimal digits only, within `min`..`max` (by default the largest
 * exact integer); a 422 otherwise, also for an empty value, a sign, a fraction or an exponent,
 * which a plain number coercion would take.
 */
export function queryInteger(min: number, max: number = Number.MAX_SAFE_INTEGER) {
  return z.preprocess((v) => (typeof v === 'string' && /^[0-9]+$/.test(v) ? Number(v) : v), z.number().int().min(min).max(max));
}

export const Uuid = z.string().min(1).max(128).describe('Interface uuid (content hash, or client-supplied).');
/** An execution's uuid, as run folders are named. */
export const RunUuid = z.string().min(1).max(128).describe('Execution uuid.');

/**
 * A uuid a client picks for a new interface: it names the interface's folder, so 1-128 of
 * A-Z a-z 0-9 _ . - and neither `.` nor `..` (the same rule as the store's isSafeName).
 */
export const CLIENT_UUID = /^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}|\.[A-Za-z0-9_-][A-Za-z0-9_.-]{0,126}|\.\.[A-Za-z0-9_-][A-Za-z0-9_.-]{0,125}|\.{3}[A-Za-z0-9_.-]{0,125})$/;
export const ClientUuid = z.string().regex(CLIENT_UUID, 'must be 1-128 of A-Z a-z 0-9 _ . -, and not . or ..');

/** A label as create and PATCH …/label accept it: bounded, so that every store indexes and counts it alike. */
export const Label = z.string().max(LIMITS.labelMax).describe(`At most ${LIMITS.labelMax} characters (UTF-16 code units).`);

export const InterfaceInfo = z
  .object({
    uuid: z.string(),
    module: z.string(),
    kind: z.string().describe('What the record is, as the reference server names it: "Interface" for every interface record (its run records are "Execution").'),
    class_name: z.string().describe('The interface class name (older gateways gave it as kind).'),
    config: JsonObject.describe('Resolved configuration (immutable).'),
    predicate: JsonObject.nullable().describe('What context interfaces folded into the identity; null when nothing was.'),
    version: z.array(z.unknown()).describe('The normalized version list the record was created from.'),
    label: z.string().nullable().describe('Mutable label; last write wins.'),
    meta: JsonObject,
    created_by: z.string(),
    created_at: z.string().describe('ISO-8601 UTC.'),
    archived: z.boolean(),
    cached: z
      .boolean()
      .describe('Its newest run finished (and no newer one is under way): the lifecycle is cached, as POST /v1/interfaces/lifecycle reports it. Computed when answered.'),
    cli: z.string().describe('A `portico get …` line that gives back this interface: module and version when they are its whole identity, else its uuid.'),
  })
  .openapi('InterfaceInfo');

export const Issue = z.object({ path: z.string().nullable(), message: z.string() }).openapi('Issue');

export const ErrorDetail = z
  .object({
    code: z.string().describe('Stable error code (see /v1/protocol errors).'),
    message: z.string(),
    issues: z.array(Issue).optional().describe('Per-field problems, attached to dotted config paths.'),
    exception: z.string().optional().describe('The Python exception class, for call_failed.'),
  })
  .openapi('ErrorDetail');

const ErrorCode = z.string().describe('Stable error code (see /v1/protocol errors).');

/** Every error status but 400 and 422, except on the call endpoint: `detail` is the message, as FastAPI and the reference server send it. */
export const ErrorResponse = z
  .object({
    detail: z.string().describe('The message (a string, as FastAPI and the reference server send it).'),
    code: ErrorCode,
    message: z.string(),
    issues: ErrorDetail.shape.issues,
    exception: ErrorDetail.shape.exception,
  })
  .openapi('ErrorResponse');

/** A 400 (resolve, lifecycle and call failures), and every failure of POST /v1/interfaces/call: the structured detail the spec fixes. */
export const BadRequestResponse = z
  .object({ detail: ErrorDetail, code: ErrorCode, message: z.string().describe('detail.message again.') })
  .openapi('BadRequestResponse');

export const ValidationIssue = z
  .object({
    type: z.string(),
    loc: z.array(z.union([z.string(), z.number()])),
    msg: z.string(),
    input: z.unknown().optional(),
  })
  .openapi('ValidationError');

export const HTTPValidationError = z
  .object({ detail: z.array(ValidationIssue), code: z.literal('validation_error'), message: z.string().describe('The problems in one readable line.') })
  .openapi('HTTPValidationError');

/** A rich result's MIME bundle, as Jupyter's display_data carries it (docs/writing/rich-results.md). */
export const DisplayBundle = z
  .record(z.string(), z.unknown())
  .describe(
    'Present when the result is something IPython could display (an object with _repr_png_, _repr_html_, … or _repr_mimebundle_; a matplotlib figure through IPython\'s formatter): MIME type → data, as Jupyter\'s display_data carries it. text/plain is always there; text types (text/html, image/svg+xml, text/markdown, text/latex) are strings, application/json and other +json types JSON values, binary types (image/png, image/jpeg, application/pdf) base64 text, or null with the bytes in a binary frame where buffer_paths says so.',
  )
  .openapi('DisplayBundle', { example: { 'image/png': 'iVBORw0KGgo…', 'text/plain': '<Figure size 640x480 with 1 Axes>' } });

/** Metadata of a display bundle, by MIME type (image width and height, isolated HTML, …). */
export const DisplayMetadata = z.record(z.string(), z.unknown()).describe('Metadata of the display bundle by MIME type, as Jupyter\'s display_data carries it; present only when there is some.');
