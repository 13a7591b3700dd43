import { dirname, join } from 'node:path';
import ts from 'typescript';
import { ROOT, relativeName, type CodeBlock } from './markdown.js';

/**
 * Type-checks markdown `ts` blocks against the package's public types, in-process: one Program for
 * all blocks, each block a module of its own (a virtual file in a folder of its page). A block whose
 * first line names its file (`// app.module.ts`, as the examples do) is that file, so the blocks of
 * one page may import each other (`import { ReportHandlers } from './reports.handlers.js'`). `nestjs-awa`
 * and its entry points (`nestjs-awa/testing`, `/health`, `/telemetry`, `/dashboard`) resolve to lib/
 * through tsconfig.json's `paths`, as in the tests. Returns one line per error, `file.md:line: message`.
 */
export function typeCheckBlocks(blocks: CodeBlock[]): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, 'tsconfig.json'), undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    },
  });
  if (!config) throw new Error('tsconfig.json could not be read');
  // Every block is a module, also one without an import (its names must not leak into the others).
  const options: ts.CompilerOptions = {
    ...config.options,
    noEmit: true,
    moduleDetection: ts.ModuleDetectionKind.Force,
  };

  const virtual = new Map<string, CodeBlock>();
  for (const block of blocks) virtual.set(virtualName(block, virtual), block);
  const folders = new Set([...virtual.keys()].map((name) => dirname(name)));
  const host = ts.createCompilerHost(options, true);
  const { getSourceFile, fileExists, readFile, directoryExists } = host;
  host.fileExists = (name) => virtual.has(name) || fileExists.call(host, name);
  host.readFile = (name) => virtual.get(name)?.code ?? readFile.call(host, name);
  host.directoryExists = (name) => folders.has(name) || (directoryExists?.call(host, name) ?? true);
  host.getSourceFile = (name, languageVersion, ...rest) => {
    const block = virtual.get(name);
    if (block) return ts.createSourceFile(name, block.code, languageVersion, true);
    return getSourceFile.call(host, name, languageVersion, ...rest);
  };

  const program = ts.createProgram([...virtual.keys()], options, host);
  const errors: string[] = [];
  for (const [name, block] of virtual) {
    const source = program.getSourceFile(name)!;
    const diagnostics = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
    for (const diagnostic of diagnostics) {
      const { line } = source.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
      errors.push(`${relativeName(block.file)}:${block.line + line}: TS${diagnostic.code} ${message}`);
    }
    for (const { specifier, line } of outsideImports(source)) {
      errors.push(
        `${relativeName(block.file)}:${block.line + line}: imports '${specifier}', which is not a package nor a block of its page`,
      );
    }
  }
  return errors;
}

/**
 * Relative imports that leave the page's blocks (`../../lib/worker/...`): a block that reached into
 * lib/ by path would type-check against internals, not against what a user can import.
 */
function outsideImports(source: ts.SourceFile): Array<{ specifier: string; line: number }> {
  const found: Array<{ specifier: string; line: number }> = [];
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement)) continue;
    const specifier = statement.moduleSpecifier;
    if (!specifier || !ts.isStringLiteral(specifier)) continue;
    if (specifier.text.startsWith('.') && !/^\.\/[\w.-]+\.js$/.test(specifier.text)) {
      found.push({ specifier: specifier.text, line: source.getLineAndCharacterOfPosition(statement.getStart()).line });
    }
  }
  return found;
}

/** `docs/.blocks/<page>/<file>.ts`: the file its first line names, else `block-<line>.ts`. */
function virtualName(block: CodeBlock, taken: Map<string, CodeBlock>): string {
  const folder = join(ROOT, 'docs', '.blocks', relativeName(block.file).replace(/[/.]/g, '_'));
  const named = /^\/\/ ([\w.-]+\.ts)\b/.exec(block.code)?.[1];
  const name = named && !taken.has(join(folder, named)) ? named : `block-${block.line}.ts`;
  return join(folder, name);
}
