/**
 * @portico/labextension: JupyterLab 4 front end for Portico. JupyterLab loads the prebuilt
 * entry points (`plugins/index.ts` as the extension, `mime/index.ts` as the MIME extension);
 * this module exports the pieces other code may reuse.
 */
export { PACKAGE_NAME, PACKAGE_VERSION, PORTICO_WIDGET_MIME } from './version.js';
export { GatewayClient, GatewayError, type GatewayConnection } from './gateway/client.js';
export { followExecution, type FollowHandlers, type FollowState } from './gateway/follow.js';
export type { ExecutionInfo, FindRequest, InterfaceInfo, OutputChunk, SearchResponse } from '@portico/protocol';
export { parseBundle, type WidgetBundle } from './mime/bundle.js';
export { DEFAULT_SETTINGS, tokenFor, type GatewaySettings } from './settings.js';
