// Seeds synthetic interface records straight into a PostgreSQL index, in bulk, inside the database
// (INSERT … SELECT over generate_series): a million rows in one statement per batch, instead of a
// million round trips. The rows are what the gateway itself would write (coded strings, see
// packages/server/src/store/postgres/coding.ts; sort_text for the config's array and object), in
// the shape of bench/index.mjs's synthetic records. Used by bench/postgres.mjs and by the EXPLAIN test.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { codeText } = await import(path.join(ROOT, 'packages/server/dist/store/postgres/coding.js'));

// translate() codes ASCII text in the database: each printable character to its coded form.
const ASCII = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join('');
const CODED = codeText(ASCII);

export const SEED_USERS = ['ada', 'grace', 'alan', 'barbara'];
export const SEED_OPTIMIZERS = ['sgd', 'adam', 'rmsprop'];

/**
 * Inserts records `from` … `from + count - 1` of `project` (idempotent: existing uuids stay).
 * Record i: module model<i % 10>, class Model<i % 3> (class_name, kind 'Interface'; in kind itself on a schema
 * older than version 5, which had no class_name), config {lr: (i % 1000) / 1000, depth: i % 12, optimizer, opt: {beta, warm}, tags: [t<i % 7>]},
 * created_by one of SEED_USERS, one second apart from 2026-01-01, every 10th labelled, every 50th archived.
 */
export async function seedPostgres(client, project, count, { from = 0, batch = 100_000 } = {}) {
  const { rows } = await client.query(`SELECT 1 FROM information_schema.columns WHERE table_name = 'portico_interfaces' AND column_name = 'class_name'`);
  const classColumn = rows.length > 0;
  for (let start = from; start < from + count; start += batch) {
    const end = Math.min(from + count, start + batch) - 1;
    await client.query(
      `WITH n AS (
         SELECT i, trim_scale((i % 1000)::numeric / 1000) AS lr, trim_scale(((i::bigint * 7919) % 101)::numeric / 100) AS beta,
                (i % 5 = 0) AS warm, (ARRAY['sgd','adam','rmsprop'])[i % 3 + 1] AS optimizer, 't' || (i % 7) AS tag
         FROM generate_series($2::int, $3::int) AS i
       )
       INSERT INTO portico_interfaces (project, uuid, module, kind, ${classColumn ? 'class_name, ' : ''}label, created_by, created_at, archived, config, predicate, version, meta, sort_text)
       SELECT $1, translate(left(md5(i::text), 24), $4, $5), translate('model' || (i % 10), $4, $5),
              ${classColumn ? "translate('Interface', $4, $5), " : ''}translate('Model' || (i % 3), $4, $5),
              CASE WHEN i % 10 = 0 THEN translate('run-' || i, $4, $5) END,
              translate((ARRAY['ada','grace','alan','barbara'])[i % 4 + 1], $4, $5),
              translate(to_char(timestamp '2026-01-01' + i * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), $4, $5),
              i % 50 = 0, c.config, '{}'::jsonb, jsonb_build_array(c.config), '{}'::jsonb,
              jsonb_build_object('opt', translate(format('{"beta":%s,"warm":%s}', beta, warm), $4, $5), 'tags', translate(format('["%s"]', tag), $4, $5))
       FROM n, LATERAL (SELECT jsonb_build_object(
                translate('lr', $4, $5), lr, translate('depth', $4, $5), i % 12, translate('optimizer', $4, $5), translate(optimizer, $4, $5),
                translate('opt', $4, $5), jsonb_build_object(translate('beta', $4, $5), beta, translate('warm', $4, $5), warm),
                translate('tags', $4, $5), jsonb_build_array(translate(tag, $4, $5))) AS config) AS c
       ON CONFLICT (project, uuid) DO NOTHING`,
      [project, start, end, ASCII, CODED],
    );
  }
  await client.query('ANALYZE portico_interfaces');
}
