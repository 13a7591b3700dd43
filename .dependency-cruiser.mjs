// The import rules of lib/ and migrations/, checked by `npm run lint` (dependency-cruiser). The
// layering below is written down in CONTRIBUTING.md (Layering): keep the two in step. Type-only
// imports count like any other.

/**
 * The core's layers, lowest first. A file imports only files of its own layer and of the layers
 * below it. Every file of lib/ (outside the optional parts) and migrations/ is in one layer.
 */
const LAYERS = [
  // Shipped as `nestjs-awa/migrations` and run by the TypeORM CLI: they carry their own SQL.
  { name: 'migrations', path: '^migrations/' },
  { name: 'constants and messages', path: '^lib/awa[.](constants|messages)[.]ts$' },
  { name: 'errors', path: '^lib/errors/' },
  { name: 'util', path: '^lib/util/' },
  { name: 'interfaces', path: '^lib/interfaces/' },
  { name: 'schema', path: '^lib/(sql|entities)/' },
  // What everything reads: cron, the options as declared and resolved (all of options/ but the
  // resolver, which checks schedules and jobs), the schedule types.
  {
    name: 'declarations',
    path: '^lib/cron/|^lib/options/(?!awa-options[.]resolver[.]ts$)|^lib/schedules/schedule[.]interface[.]ts$',
  },
  { name: 'infrastructure', path: '^lib/(database|decorators|instance|events)/|^lib/awa[.](explorer|registry)[.]ts$' },
  { name: 'producer', path: '^lib/producer/' },
  { name: 'schedules', path: '^lib/schedules/(?!schedule[.]interface[.]ts$)' },
  { name: 'worker', path: '^lib/worker/' },
  { name: 'heartbeat and maintenance', path: '^lib/(heartbeat|maintenance)/' },
  { name: 'admin', path: '^lib/admin/' },
  // What puts it all together: option resolution, the module, its start and stop, the root entry.
  {
    name: 'assembly',
    path: '^lib/options/awa-options[.]resolver[.]ts$|^lib/awa[.](status|lifecycle|module|single-copy)[.]ts$|^lib/index[.]ts$',
  },
];

/** The optional parts: each can be left out whole, so the core never imports them, nor they each other. */
const OPTIONAL = ['dashboard', 'telemetry', 'health', 'testing'];

/**
 * TEMPORARY exceptions, one import each (a file, and the files it may import against a rule), each
 * with a comment saying why and until when; delete its line when the import is gone. None now.
 */
/** @type {Array<{ from: string, to: string }>} */
const EXCEPTIONS = [];

const matches = (path, file) => new RegExp(path).test(file);

/**
 * Forbids imports from `from` to any of `to`, less the EXCEPTIONS: an excepted file is checked by a
 * rule of its own that leaves out only its excepted targets.
 */
function forbid(name, comment, from, to) {
  const excepted = EXCEPTIONS.filter((e) => matches(from, e.from));
  const files = [...new Set(excepted.map((e) => e.from))];
  const anchored = (file) => `^${file.replace(/[.]/g, '[.]')}$`;
  return [
    { name, comment, severity: 'error', from: { path: from, pathNot: files.map(anchored) }, to: { path: to } },
    ...files.map((file) => ({
      name,
      comment: `${comment} (less its temporary exceptions)`,
      severity: 'error',
      from: { path: anchored(file) },
      to: { path: to, pathNot: excepted.filter((e) => e.from === file).map((e) => e.to) },
    })),
  ];
}

const layering = LAYERS.slice(0, -1).flatMap((layer, i) =>
  forbid(
    'layering',
    `${layer.name} imports only its own layer and those below it (CONTRIBUTING.md, Layering)`,
    layer.path,
    LAYERS.slice(i + 1).map((above) => above.path),
  ),
);

const optionalPath = `^lib/(${OPTIONAL.join('|')})/`;

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'no import cycle, type-only imports included',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'every import resolves (else the rules below would not see it)',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    ...layering,
    ...forbid(
      'core-not-into-optional',
      `the core imports none of the optional parts (${OPTIONAL.join(', ')})`,
      `^(lib|migrations)/(?!(${OPTIONAL.join('|')})/)`,
      [optionalPath],
    ),
    ...OPTIONAL.map((part) => ({
      name: 'optional-parts-apart',
      comment: 'an optional part imports no other optional part',
      severity: 'error',
      from: { path: `^lib/${part}/` },
      to: { path: `^lib/(${OPTIONAL.filter((other) => other !== part).join('|')})/` },
    })),
    {
      name: 'in-a-layer',
      comment: 'every file of the core is in a layer: add a new folder to LAYERS and to CONTRIBUTING.md',
      severity: 'error',
      from: {},
      to: { path: '^(lib|migrations)/', pathNot: [...LAYERS.map((layer) => layer.path), optionalPath] },
    },
  ],
  options: {
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
  },
};
