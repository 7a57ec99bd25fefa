import { describe, expect, it } from 'vitest';
import { LIMITS } from '../config/constants.js';
import { parseServeArgs, UsageError } from './options.js';

describe('portico serve options', () => {
  it('--upload-max takes bytes or K/M/G/T sizes, from the flag or PORTICO_UPLOAD_MAX, with a documented default', () => {
    expect(parseServeArgs([], {}).uploadMax).toBe(LIMITS.uploadMaxDefault);
    expect(parseServeArgs(['--upload-max', '1048576'], {}).uploadMax).toBe(1048576);
    expect(parseServeArgs(['--upload-max', '512M'], {}).uploadMax).toBe(512 * 1024 ** 2);
    expect(parseServeArgs(['--upload-max', '2g'], {}).uploadMax).toBe(2 * 1024 ** 3);
    expect(parseServeArgs(['--upload-max', '1TiB'], {}).uploadMax).toBe(1024 ** 4);
    expect(parseServeArgs([], { PORTICO_UPLOAD_MAX: '64K' }).uploadMax).toBe(64 * 1024);
    expect(parseServeArgs(['--upload-max', '8K'], { PORTICO_UPLOAD_MAX: '64K' }).uploadMax).toBe(8 * 1024);
    for (const bad of ['0', '-1', '1.5G', 'lots', '', '10X']) {
      expect(() => parseServeArgs([`--upload-max=${bad}`], {}), bad).toThrow(UsageError);
    }
  });

  it('--widget-buffer-max takes a size from the flag or PORTICO_WIDGET_BUFFER_MAX, 64M by default', () => {
    expect(parseServeArgs([], {}).widgetBufferMax).toBe(LIMITS.widgetBufferMaxDefault);
    expect(LIMITS.widgetBufferMaxDefault).toBe(64 * 1024 ** 2);
    expect(parseServeArgs(['--widget-buffer-max', '1M'], {}).widgetBufferMax).toBe(1024 ** 2);
    expect(parseServeArgs([], { PORTICO_WIDGET_BUFFER_MAX: '256K' }).widgetBufferMax).toBe(256 * 1024);
    expect(() => parseServeArgs(['--widget-buffer-max=0'], {})).toThrow(UsageError);
  });

  it('refuses source editing without its own token, and OIDC without an audience', () => {
    expect(() => parseServeArgs(['--enable-source-api'], {})).toThrow(/--source-token/);
    const source = parseServeArgs(['--enable-source-api', '--source-token', 's'], {});
    expect(source).toMatchObject({ enableSourceApi: true, sourceToken: 's' });
    expect(parseServeArgs([], { PORTICO_ENABLE_SOURCE_API: 'true', PORTICO_SOURCE_TOKEN: 't' })).toMatchObject({ enableSourceApi: true, sourceToken: 't' });
    expect(() => parseServeArgs(['--oidc-issuer', 'https://id.example'], {})).toThrow(/--oidc-audience/);
    expect(parseServeArgs(['--oidc-issuer', 'https://id.example', '--oidc-audience', 'portico'], {})).toMatchObject({ oidcUserClaim: 'sub' });
    // Gateways sharing an index forward with a secret: OIDC alone gives them none.
    const oidc = ['--oidc-issuer', 'https://id.example', '--oidc-audience', 'portico', '--store', 'postgres://u@localhost/db'];
    expect(() => parseServeArgs(oidc, {})).toThrow(/--peer-secret/);
    expect(parseServeArgs([...oidc, '--peer-secret', 's'], {})).toMatchObject({ peerSecret: 's' });
    // The lease options.
    expect(parseServeArgs(['--instance-lease', '2', '--advertise-url', 'http://10.0.0.5:8000/'], {})).toMatchObject({ instanceLeaseMs: 2000, advertiseUrl: 'http://10.0.0.5:8000' });
    expect(() => parseServeArgs(['--advertise-url', 'http://10.0.0.5:8000/portico'], {})).toThrow(/--advertise-url/);
    expect(() => parseServeArgs(['--instance-lease', '0.5'], {})).toThrow(/--instance-lease/);
  });

  it('a non-loopback host needs an api token or an OIDC issuer (or --insecure)', () => {
    expect(() => parseServeArgs(['--host', '0.0.0.0'], {})).toThrow(/--api-token or --oidc-issuer/);
    expect(parseServeArgs(['--host', '0.0.0.0', '--api-token', 't'], {}).host).toBe('0.0.0.0');
    expect(parseServeArgs(['--host', '0.0.0.0', '--oidc-issuer', 'https://id.example', '--oidc-audience', 'a'], {}).host).toBe('0.0.0.0');
    expect(parseServeArgs(['--host', '0.0.0.0', '--insecure'], {}).insecure).toBe(true);
  });

  it('on loopback, local JupyterLab origins are allowed with no flag; --allow-origin adds more; elsewhere none unless given', () => {
    const local = parseServeArgs([], {}).allowOrigins;
    expect(local).toEqual(expect.arrayContaining(['http://localhost:8888', 'http://127.0.0.1:8888', 'http://localhost:8890', 'http://127.0.0.1:8889']));
    expect(local).not.toContain('http://localhost:8891');
    expect(parseServeArgs(['--allow-origin', 'https://example.org', '--allow-origin', 'http://a.test:8080'], {}).allowOrigins).toEqual(
      expect.arrayContaining([...local, 'https://example.org', 'http://a.test:8080']),
    );
    expect(parseServeArgs(['--allow-origins', 'https://a.test,https://b.test'], {}).allowOrigins).toEqual(expect.arrayContaining(['https://a.test', 'https://b.test']));
    expect(parseServeArgs([], { PORTICO_ALLOW_ORIGINS: 'https://env.test' }).allowOrigins).toContain('https://env.test');
    expect(parseServeArgs(['--host', '0.0.0.0', '--api-token', 't'], {}).allowOrigins).toEqual([]);
    expect(parseServeArgs(['--host', '0.0.0.0', '--api-token', 't', '--allow-origin', 'https://lab.example'], {}).allowOrigins).toEqual(['https://lab.example']);
    for (const bad of ['localhost:8888', 'http://a.test/path', 'not a url']) {
      expect(() => parseServeArgs(['--allow-origin', bad], {}), bad).toThrow(UsageError);
    }
  });

  it('--workers picks local (default) or slurm; --worker-connect takes HOST or HOST:PORT; --worker-wait seconds', () => {
    expect(parseServeArgs([], {})).toMatchObject({ workers: 'local', workerWaitMs: 300_000 });
    expect(parseServeArgs([], {}).workerConnect).toBeUndefined();
    expect(parseServeArgs(['--workers', 'slurm', '--worker-connect', 'login1:4000', '--worker-wait', '60'], {})).toMatchObject({ workers: 'slurm', workerConnect: 'login1:4000', workerWaitMs: 60_000 });
    expect(parseServeArgs([], { PORTICO_WORKERS: 'slurm', PORTICO_WORKER_CONNECT: '[fd00::1]:4000' })).toMatchObject({ workers: 'slurm', workerConnect: '[fd00::1]:4000' });
    expect(() => parseServeArgs(['--workers', 'kubernetes'], {})).toThrow(/--workers must be one of local, slurm/);
    for (const bad of ['http://login1:4000', 'a:b', 'h:99999', 'a:1:2']) expect(() => parseServeArgs([`--worker-connect=${bad}`], {}), bad).toThrow(UsageError);
  });

  it('--executor picks local (default) or slurm, from the flag or PORTICO_EXECUTOR; Slurm names are checked', () => {
    expect(parseServeArgs([], {}).executor).toBe('local');
    expect(parseServeArgs(['--executor', 'slurm'], {}).executor).toBe('slurm');
    expect(parseServeArgs([], { PORTICO_EXECUTOR: 'slurm', PORTICO_SLURM_PARTITION: 'gpu', PORTICO_SLURM_ACCOUNT: 'lab1' })).toMatchObject({
      executor: 'slurm',
      slurm: { partition: 'gpu', account: 'lab1' },
    });
    expect(parseServeArgs(['--executor', 'slurm', '--slurm-partition', 'short'], { PORTICO_SLURM_PARTITION: 'gpu' }).slurm.partition).toBe('short');
    expect(() => parseServeArgs(['--executor', 'kubernetes'], {})).toThrow(/--executor must be one of local, slurm/);
    for (const bad of ['-p', 'a b', '../x', 'x;y']) expect(() => parseServeArgs([`--slurm-partition=${bad}`], {}), bad).toThrow(UsageError);
  });
});
