/**
 * Mounts the live widget of an interface through @portico/widget-runtime, with the credentials
 * the settings allow for its gateway. The MIME renderer, the sidebar and the widget-manager view
 * all mount through here.
 */
import { mount, type WidgetHandle } from '@portico/widget-runtime';
import { settingsStore, tokenFor, type SettingsStore } from './settings.js';

export interface LiveWidgetTarget {
  /** Gateway base URL. */
  url: string;
  /** The interface uuid. */
  uuid: string;
  /** Project directory to bind, if any. */
  project?: string | null;
}

/**
 * Mounts the widget of `target` into `el`. Resolves to the handle, or to undefined when the
 * mount failed: the runtime has then shown the reason inside `el` and logged it.
 */
export async function mountLiveWidget(el: HTMLElement, target: LiveWidgetTarget, store: SettingsStore = settingsStore): Promise<WidgetHandle | undefined> {
  const settings = await store.ready();
  try {
    return await mount(el, {
      url: target.url,
      uuid: target.uuid,
      token: tokenFor(target.url, settings),
      project: target.project || undefined,
    });
  } catch {
    return undefined;
  }
}
