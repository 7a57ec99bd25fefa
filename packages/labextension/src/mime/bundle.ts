/**
 * The data of an `application/vnd.portico.widget+json` output, as `portico.client` writes it:
 * `{url, uuid, module, project, version: 1}`. It never holds a token; the renderer takes
 * credentials from the settings.
 */

/** The bundle format this renderer understands. */
export const BUNDLE_VERSION = 1;

export interface WidgetBundle {
  url: string;
  uuid: string;
  module: string | null;
  project: string | null;
  version: number;
}

/** Checks an output's data; an error is a sentence to show in place of the widget. */
export function parseBundle(data: unknown): { bundle: WidgetBundle } | { error: string } {
  if (!data || typeof data !== 'object' || Array.isArray(data)) return { error: 'The Portico widget output holds no data.' };
  const { url, uuid, module, project, version = BUNDLE_VERSION } = data as Record<string, unknown>;
  if (typeof version !== 'number' || version > BUNDLE_VERSION) {
    return { error: `This output was written by a newer Portico client (format ${String(version)}); update @portico/labextension to show it.` };
  }
  if (typeof url !== 'string' || !/^https?:\/\//i.test(url)) return { error: 'The Portico widget output names no http(s) gateway URL.' };
  if (typeof uuid !== 'string' || uuid === '') return { error: 'The Portico widget output names no interface uuid.' };
  return {
    bundle: {
      url,
      uuid,
      module: typeof module === 'string' ? module : null,
      project: typeof project === 'string' && project !== '' ? project : null,
      version,
    },
  };
}
