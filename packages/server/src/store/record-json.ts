/**
 * The one serialization of an interface record, and the checks every store runs on a write before
 * anything of it reaches memory or disk: a record the index took and could not write back (JSON
 * nested past what JSON.stringify can walk, a BigInt, a cycle) used to sit in memory and fail
 * every later listing and search until a restart.
 *
 * A new record (insert) must fit:
 *   - its fields' types (uuid a safe folder name, config, predicate and meta objects, version a
 *     list, label a string or null, archived a boolean, the rest strings): else `invalid_argument`;
 *   - label at most LIMITS.labelMax UTF-16 code units: else `validation_error`, as the API answers;
 *   - nesting at most LIMITS.jsonDepthMax levels, the record being level 0 (its `meta` is level 1,
 *     as in a create request): else `invalid_argument`, with the message the request bound gives;
 *   - its compact JSON text, label aside, at most LIMITS.recordMaxBytes UTF-8 bytes: else
 *     `payload_too_large`, naming its largest field. The label is left out so that a relabelled
 *     record still fits where it is copied to (`portico index copy`).
 * A change (update) must be a label as above or an archived boolean. Records stored before these
 * bounds keep their place: only what cannot be serialized at all is refused of them.
 *
 * The text returned is what the store writes (journal, record file): serialized once per write.
 */
import { LIMITS } from '../config/constants.js';
import { jsonTooDeep, jsonTooDeepError } from '../contract/json-depth.js';
import { PorticoError } from '../errors.js';
import { checkSafeName } from './files.js';
import type { InterfaceRecord, RecordPatch } from './store.js';

const STRING_FIELDS = ['module', 'kind', 'class_name', 'created_by', 'created_at'] as const;
const OBJECT_FIELDS = ['config', 'predicate', 'meta'] as const;

const isObject = (value: unknown): boolean => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * The compact JSON text of a new record, after every check above.
 *
 * @example newRecordJson({ ...record, meta: { blob: 'x'.repeat(2 ** 20) } }) // throws payload_too_large
 */
export function newRecordJson(record: InterfaceRecord): string {
  checkShape(record);
  checkLabel(record.label, record.uuid);
  const text = serialize(record);
  const deep = jsonTooDeep(text);
  if (deep !== -1) throw new PorticoError('invalid_argument', `Cannot store interface '${record.uuid}': ${jsonTooDeepError(text, deep).message}`);
  // A UTF-16 code unit takes at most 3 UTF-8 bytes, so most records need no count of their bytes.
  if (text.length > LIMITS.recordMaxBytes / 3) {
    const bytes = Buffer.byteLength(text) - Buffer.byteLength(JSON.stringify(record.label));
    if (bytes > LIMITS.recordMaxBytes) throw tooLarge(record, bytes);
  }
  return text;
}

/** The compact JSON text of a record already stored (after a checked patch): its types are checked, not its bounds. */
export function recordJson(record: InterfaceRecord): string {
  checkShape(record);
  return serialize(record);
}

/** Whether a record read back from a file (portico reindex) can be stored: its types hold and it serializes. */
export function isStorable(record: InterfaceRecord): boolean {
  try {
    recordJson(record);
    return true;
  } catch {
    return false;
  }
}

/** Throws unless the patch sets only a label (string or null, at most LIMITS.labelMax) and archived (a boolean). */
export function checkPatch(patch: RecordPatch, uuid: string): void {
  for (const key of Object.keys(patch)) {
    if (key !== 'label' && key !== 'archived') throw refused(uuid, `only its label and archived flag change, not ${key}`);
  }
  if (patch.label !== undefined) checkLabel(patch.label, uuid);
  if (patch.archived !== undefined && typeof patch.archived !== 'boolean') throw refused(uuid, 'archived must be a boolean');
}

function refused(uuid: string, why: string): PorticoError {
  return new PorticoError('invalid_argument', `Cannot store interface '${uuid}': ${why}`);
}

function checkShape(record: InterfaceRecord): void {
  if (typeof record?.uuid !== 'string') throw new PorticoError('invalid_argument', 'Cannot store an interface without a string uuid');
  checkSafeName(record.uuid);
  for (const field of STRING_FIELDS) if (typeof record[field] !== 'string') throw refused(record.uuid, `${field} must be a string`);
  for (const field of OBJECT_FIELDS) if (!isObject(record[field])) throw refused(record.uuid, `${field} must be an object`);
  if (!Array.isArray(record.version)) throw refused(record.uuid, 'version must be a list');
  if (record.label !== null && typeof record.label !== 'string') throw refused(record.uuid, 'label must be a string or null');
  if (typeof record.archived !== 'boolean') throw refused(record.uuid, 'archived must be a boolean');
}

function checkLabel(label: unknown, uuid: string): void {
  if (label === null) return;
  if (typeof label !== 'string') throw refused(uuid, 'label must be a string or null');
  if (label.length > LIMITS.labelMax) {
    const message = `label must be at most ${LIMITS.labelMax} characters (UTF-16 code units), not ${label.length}`;
    throw new PorticoError('validation_error', `Cannot store interface '${uuid}': ${message}`, { issues: [{ path: 'label', message }] });
  }
}

/** JSON.stringify, or the refusal naming the field it failed on. */
function serialize(record: InterfaceRecord): string {
  try {
    return JSON.stringify(record);
  } catch (err) {
    const field = (Object.keys(record) as Array<keyof InterfaceRecord>).find((key) => !serializes(record[key])) ?? 'record';
    const why = (err as Error)?.message?.split('\n')[0] ?? String(err);
    // V8 walks nested values recursively: a few thousand levels overflow its stack.
    if (err instanceof RangeError && /call stack/i.test(why)) throw refused(record.uuid, `JSON nested deeper than ${LIMITS.jsonDepthMax} levels (at $.${field})`);
    if (err instanceof RangeError) throw new PorticoError('payload_too_large', `Cannot store interface '${record.uuid}': its ${field} is too large to serialize (${why})`);
    throw refused(record.uuid, `its ${field} is not JSON (${why})`);
  }
}

function serializes(value: unknown): boolean {
  try {
    JSON.stringify(value);
    return true;
  } catch {
    return false;
  }
}

function tooLarge(record: InterfaceRecord, bytes: number): PorticoError {
  const sizes = (Object.keys(record) as Array<keyof InterfaceRecord>)
    .filter((key) => key !== 'label')
    .map((key) => [key, Buffer.byteLength(JSON.stringify(record[key]) ?? '')] as const)
    .sort((a, b) => b[1] - a[1]);
  const [field, size] = sizes[0]!;
  return new PorticoError(
    'payload_too_large',
    `Interface '${record.uuid}' would take ${bytes} bytes as JSON (its label aside), more than the ${LIMITS.recordMaxBytes} bytes a record may take (limits.recordMaxBytes); its ${field} alone takes ${size} bytes`,
  );
}
