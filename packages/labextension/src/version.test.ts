import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PACKAGE_NAME, PACKAGE_VERSION, PLUGIN_IDS } from './version.js';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

describe('version', () => {
  it('names and versions match package.json', () => {
    expect(PACKAGE_NAME).toBe(pkg.name);
    expect(PACKAGE_VERSION).toBe(pkg.version);
  });

  it('the settings schema is named after the settings plugin', () => {
    const schemaName = PLUGIN_IDS.settings.split(':')[1];
    const schema = JSON.parse(readFileSync(new URL(`../${pkg.jupyterlab.schemaDir}/${schemaName}.json`, import.meta.url), 'utf8'));
    expect(Object.keys(schema.properties)).toEqual(['gatewayUrl', 'token', 'project']);
  });
});
