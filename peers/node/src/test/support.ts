// Finds the repository's shared files from wherever the compiled tests run (dist/test/).

import { existsSync } from 'node:fs';
import * as path from 'node:path';

/** The nearest `relative` walking up from this directory, or undefined at the root. */
export function findUp(relative: string): string | undefined {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, relative);
    if (existsSync(candidate)) return candidate;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/** This peer's folder (the one holding package.json). */
export const PEER_DIR = path.dirname(findUp('package.json') ?? path.join(__dirname, '..', '..', 'package.json'));
