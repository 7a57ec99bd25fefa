/** The sidebar tab's icon. */
import { LabIcon } from '@jupyterlab/ui-components';

const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path d="M3 20V9l9-6 9 6v11h-3v-9.4l-6-4-6 4V20z"/>
    <path d="M9 20v-7h6v7h-2v-5h-2v5z"/>
  </g>
</svg>`;

export const porticoIcon = new LabIcon({ name: 'portico:icon', svgstr });
