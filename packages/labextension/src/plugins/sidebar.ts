/**
 * Adds the Portico sidebar to the left area, with a command (and palette entry) to open it. Any
 * shell with a left area takes it (JupyterLab's, Notebook 7's); where the shell has none (Voilà),
 * nothing is added and nothing fails.
 */
import { ILayoutRestorer, type JupyterFrontEnd, type JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { PorticoSidebar } from '../sidebar/panel.js';
import { COMMAND_IDS, PACKAGE_VERSION, PLUGIN_IDS } from '../version.js';

/** Position among the left-area tabs (higher is lower down). */
const SIDEBAR_RANK = 900;

export const sidebarPlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_IDS.sidebar,
  description: "Search a Portico project's interfaces; open one to see its info, live widget and runs.",
  autoStart: true,
  optional: [ILayoutRestorer, ICommandPalette],
  activate: (app: JupyterFrontEnd, restorer: ILayoutRestorer | null, palette: ICommandPalette | null) => {
    const shell = app.shell;
    const sidebar = new PorticoSidebar();
    try {
      shell.add(sidebar, 'left', { rank: SIDEBAR_RANK });
    } catch (err) {
      console.info(`[portico] this front end has no left area for the Portico sidebar (${err}); widgets still render`);
      sidebar.dispose();
      return;
    }
    restorer?.add(sidebar, sidebar.id);
    app.commands.addCommand(COMMAND_IDS.openSidebar, {
      label: 'Portico: Show Interfaces',
      caption: "Search the gateway's interfaces",
      execute: () => shell.activateById(sidebar.id),
    });
    palette?.addItem({ command: COMMAND_IDS.openSidebar, category: 'Portico' });
    console.info(`[portico] @portico/labextension ${PACKAGE_VERSION} activated`);
  },
};
