/**
 * The Python client, installable with pip from the gateway itself (`GET /v1/python`): the wheel of
 * the bundled package, built once per gateway on first request (kernel/python-package.ts) and
 * kept; its version is the gateway's.
 */
import { VERSION } from '../config/constants.js';
import { PorticoError } from '../errors.js';
import { buildWheel, type Wheel } from '../kernel/python-package.js';

export interface PythonIndex {
  version: string;
  wheels: Array<{ filename: string; url: string; sha256: string; size: number }>;
  /** The command that installs it from this gateway. */
  pip: string;
}

export class PythonPackageService {
  private wheel: Promise<Wheel> | undefined;

  constructor(private readonly python: string) {}

  /** The wheel; built on first use (a failed build is tried again on the next request). */
  private built(): Promise<Wheel> {
    this.wheel ??= buildWheel(this.python).catch((err: unknown) => {
      this.wheel = undefined;
      throw err;
    });
    return this.wheel;
  }

  /** What `GET /v1/python` lists; `base` is the gateway's URL as the client sees it. */
  async index(base: string): Promise<PythonIndex> {
    const wheel = await this.built();
    const url = `${base}/v1/python/${wheel.filename}`;
    return { version: VERSION, wheels: [{ filename: wheel.filename, url, sha256: wheel.sha256, size: wheel.bytes.length }], pip: `pip install ${url}` };
  }

  /** The file `filename` (`not_found` for any other name). */
  async file(filename: string): Promise<Wheel> {
    const wheel = await this.built();
    if (filename !== wheel.filename) throw new PorticoError('not_found', `No file '${filename}': this gateway serves ${wheel.filename}`);
    return wheel;
  }
}
