/** Names and versions this extension announces; a unit test keeps them equal to package.json. */

export const PACKAGE_NAME = '@portico/labextension';
export const PACKAGE_VERSION = '0.1.0';

/** The MIME type `portico.client` puts in `_repr_mimebundle_` (with text/html and text/plain fallbacks). */
export const PORTICO_WIDGET_MIME = 'application/vnd.portico.widget+json';

/** Plugin ids; the settings schema file is named after the settings plugin (`schema/settings.json`). */
export const PLUGIN_IDS = {
  settings: `${PACKAGE_NAME}:settings`,
  sidebar: `${PACKAGE_NAME}:sidebar`,
  widgetManager: `${PACKAGE_NAME}:widget-manager`,
  mime: `${PACKAGE_NAME}:mime`,
} as const;

/** Command ids, all in the `portico:` namespace. */
export const COMMAND_IDS = {
  openSidebar: 'portico:open-sidebar',
} as const;
