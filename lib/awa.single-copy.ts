import { AwaMessages } from './awa.messages.js';

/**
 * The package ships an ESM and a CommonJS build (docs/handlers-and-producer.md, "Module formats"). A process that loads
 * both holds two copies of every class and injection token, and Nest then fails to inject them
 * with a message that does not say why. So each build records itself on load, and the second
 * format to arrive warns once. Loading one build again (jest.resetModules) is not a second format.
 */
const LOADED = Symbol.for('nestjs-awa.loaded-formats');

type Loaded = { formats: Set<string>; warned: boolean };

/** 'commonjs' when this file was compiled to CommonJS (module and exports exist), else 'esm'. */
export const BUILD_FORMAT = typeof module === 'object' && typeof exports === 'object' ? 'commonjs' : 'esm';

export function registerBuild(
  format: string,
  scope: Record<symbol, unknown> = globalThis as unknown as Record<symbol, unknown>,
): void {
  const loaded = (scope[LOADED] ??= { formats: new Set<string>(), warned: false }) as Loaded;
  loaded.formats.add(format);
  if (loaded.formats.size > 1 && !loaded.warned) {
    loaded.warned = true;
    process.emitWarning(AwaMessages.loadedTwice([...loaded.formats]), { code: 'NESTJS_AWA_DUAL_PACKAGE' });
  }
}

registerBuild(BUILD_FORMAT);
