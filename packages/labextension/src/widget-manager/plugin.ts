/**
 * Registers the Portico widget with the Jupyter widget manager (ipywidgets), when it is there.
 *
 * Everything that touches @jupyter-widgets/base lives in ./ipywidget.ts, loaded with a dynamic
 * import: the manager provides that shared module, and a module that statically imported it
 * would fail to load without the manager, taking the sidebar down with it. Here only this
 * plugin's registration is skipped.
 */
import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { PLUGIN_IDS } from '../version.js';

export const widgetManagerPlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_IDS.widgetManager,
  description: 'Lets ipywidgets layouts hold Portico widgets (model PorticoWidgetModel of module @portico/labextension), when the Jupyter widget manager is installed.',
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    void register(app);
  },
};

async function register(app: JupyterFrontEnd): Promise<void> {
  let widgets: typeof import('./ipywidget.js');
  try {
    widgets = await import('./ipywidget.js');
  } catch {
    console.info('[portico] no Jupyter widget manager (@jupyter-widgets/base is not shared): ipywidgets integration is off');
    return;
  }
  const registry = await app.resolveOptionalService(widgets.IJupyterWidgetRegistry);
  if (!registry) {
    console.info('[portico] the Jupyter widget manager is not active: ipywidgets integration is off');
    return;
  }
  registry.registerWidget({ name: widgets.MODULE_NAME, version: widgets.MODULE_VERSION, exports: widgets.exported });
}
