/**
 * @portico/labextension — JupyterLab 4 front end for Portico widgets.
 *
 * The MIME renderer and the prebuilt federated bundle arrive with issue 7; until then this
 * package exports the MIME type it will render so that the workspace builds end to end.
 */
export const PORTICO_WIDGET_MIME = 'application/vnd.portico.widget+json';
