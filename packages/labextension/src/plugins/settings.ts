/** Feeds the gateway settings (schema/settings.json) from JupyterLab's settings registry into the shared store. */
import type { JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { settingsStore } from '../settings.js';
import { PLUGIN_IDS } from '../version.js';

export const settingsPlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_IDS.settings,
  description: 'Gateway URL, token and project for Portico widgets and the Portico sidebar.',
  autoStart: true,
  // Optional: a front end without a settings registry (Voilà) runs the widgets on the defaults.
  optional: [ISettingRegistry],
  activate: (_app, registry: ISettingRegistry | null) => {
    if (!registry) {
      settingsStore.update({});
      return;
    }
    void registry
      .load(PLUGIN_IDS.settings)
      .then((settings) => {
        const apply = () => settingsStore.update(settings.composite as Record<string, unknown>);
        apply();
        settings.changed.connect(apply);
      })
      .catch((err) => {
        console.warn(`[portico] settings could not be loaded, using the defaults: ${err}`);
        settingsStore.update({});
      });
  },
};
