/**
 * The `jupyterlab.extension` entry point: the settings, the sidebar and the optional
 * widget-manager plugin. The MIME renderer is the separate `mimeExtension` (../mime/index.ts).
 */
import type { JupyterFrontEndPlugin } from '@jupyterlab/application';
import { widgetManagerPlugin } from '../widget-manager/plugin.js';
import { settingsPlugin } from './settings.js';
import { sidebarPlugin } from './sidebar.js';

const plugins: JupyterFrontEndPlugin<any>[] = [settingsPlugin, sidebarPlugin, widgetManagerPlugin];

export default plugins;
