// The random command sequences of the model-based test. The order and weights of the arbitraries
// below decide which sequence a fast-check seed stands for: change them and reported seeds no
// longer replay the same failure.
import fc from 'fast-check';
import {
  CloseCommand,
  OnInstance,
  type Probe,
  RaceCommand,
  ReopenCommand,
  ReservationProbeCommand,
  ReservationScenarioCommand,
  ShadowedReservationCommand,
} from './instance-commands.js';
import {
  type AfterKind,
  AppendCommand,
  type AppendKind,
  BadListCommand,
  CreateCommand,
  type CreateExtra,
  DeleteCommand,
  DeleteIfCommand,
  HasCommand,
  ListCommand,
  LoadCommand,
  ReadCommand,
  StartSessionCommand,
  UpdateCommand,
} from './session-commands.js';
import { type Cmd, CWDS, GIVEN_CREATED_AT, TYPES } from './sides.js';

// Valid ids dominate so that sessions grow; the invalid one keeps INVALID answers in the mix.
const id = fc.constantFrom('s0', 's0', 's1', 's1', 's2', 'bad/id');
const createExtraArbitrary: fc.Arbitrary<CreateExtra> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({}) },
  fc.record({ tags: fc.array(fc.constantFrom('x', 'y', ''), { maxLength: 2 }) }),
  fc.record({ parent: fc.record({ id: fc.constantFrom('s0', 's9'), seq: fc.integer({ min: -1, max: 3 }) }) }),
  fc.record({ createdAt: fc.constantFrom('2025-06-01T12:00:00+02:00', GIVEN_CREATED_AT) }),
  // Malformed: each is INVALID and reserves nothing.
  fc.constantFrom<CreateExtra>(
    { tags: 'x' },
    { parent: { id: 'bad/id', seq: 0 } },
    { parent: { id: 's0', seq: 1.5 } },
    { createdAt: 'soon' },
    { colour: 'red' },
  ),
);
// Each command runs on instance 0 or 1 at random: interleaving two live instances is where stale
// per-instance state shows.
const onEitherInstance = (command: fc.Arbitrary<Cmd>) =>
  fc.tuple(command, fc.constantFrom<0 | 1>(0, 1)).map(([c, i]) => new OnInstance(c, i));

function createArbitraryFor(id: fc.Arbitrary<string>): fc.Arbitrary<Cmd> {
  return fc
    .tuple(
      id,
      fc.constantFrom(...CWDS),
      fc.option(fc.constantFrom('T1', 'T2', ''), { nil: undefined }),
      createExtraArbitrary,
    )
    .map(([i, c, t, x]) => new CreateCommand(i, c, t, x));
}

function appendArbitraryFor(id: fc.Arbitrary<string>): fc.Arbitrary<Cmd> {
  return fc
    .tuple(
      id,
      fc.oneof(
        {
          weight: 6,
          arbitrary: fc.constantFrom<AppendKind>(
            'valid',
            'valid',
            'valid',
            'behind',
            'ahead',
            'retry',
            'retry-first',
            'conflicting',
          ),
        },
        fc.constantFrom<AppendKind>(
          'empty',
          'gap',
          'nan-data',
          'bad-time',
          'bad-type',
          'negative-seq',
          'not-array',
        ),
      ),
      fc.array(fc.nat(TYPES.length - 1), { minLength: 1, maxLength: 4 }),
      fc.nat(99),
      // Half the appends pass after (contract §4.2), right or stale; the model decides the answer.
      fc.constantFrom<AfterKind>('none', 'none', 'none', 'right', 'right', 'stale'),
    )
    .map(([i, k, t, p, a]) => new AppendCommand(i, k, t, p, a));
}

function readArbitraryFor(id: fc.Arbitrary<string>): fc.Arbitrary<Cmd> {
  return fc
    .tuple(
      id,
      fc.nat(6),
      fc.nat(6),
      fc.constantFrom<ReadCommand['shape']>(
        'range',
        'range',
        'range',
        'all',
        'from',
        'reversed',
        'bad',
        'last',
        'last',
        'rangeLast',
        'badLast',
      ),
    )
    .map(([i, f, s, shape]) => new ReadCommand(i, f, s, shape));
}

function updateArbitraryFor(id: fc.Arbitrary<string>): fc.Arbitrary<Cmd> {
  return fc
    .tuple(
      id,
      fc.oneof(
        fc.record({ title: fc.constantFrom('A', 'B') }),
        fc.record({ tags: fc.array(fc.constantFrom('x', 'y'), { maxLength: 2 }) }),
        fc.record({
          attrs: fc.dictionary(fc.constantFrom('k', '__proto__', 'n'), fc.integer({ min: 0, max: 3 }), {
            maxKeys: 2,
          }),
        }),
        fc.record({ firstPrompt: fc.constantFrom('P1', 'P2') }),
        fc.record({
          title: fc.constantFrom('A', 'B'),
          tags: fc.array(fc.constantFrom('x', 'y'), { maxLength: 2 }),
          firstPrompt: fc.constantFrom('P1'),
        }),
        fc.constant({}),
        fc.constant({ title: 7 }),
        fc.constant({ tags: 'not-a-list' }),
        fc.constant({ title: 'C', colour: 'red' }),
      ),
    )
    .map(([i, p]) => new UpdateCommand(i, p));
}

function closeArbitraryFor(id: fc.Arbitrary<string>): fc.Arbitrary<Cmd> {
  return fc
    .tuple(
      id,
      fc.constantFrom<Probe>('create', 'append', 'load', 'read', 'list', 'has', 'update', 'delete', 'close'),
    )
    .map(([i, p]) => new CloseCommand(i, p));
}

/** The commands that act on one live instance, over the ids `id` draws. */
function perInstanceArbitrariesFor(id: fc.Arbitrary<string>): fc.Arbitrary<Cmd>[] {
  const createArbitrary = createArbitraryFor(id);
  const appendArbitrary = appendArbitraryFor(id);
  const loadArbitrary = fc
    .tuple(id, fc.constantFrom<'keep' | 'cut'>('keep', 'keep', 'cut'))
    .map(([i, t]) => new LoadCommand(i, t));
  // fc.commands picks among its arbitraries uniformly: listing create, append and load more than once
  // makes sessions that exist and grow, where most rules live.
  const startArbitrary = fc
    .tuple(id, fc.constantFrom(...CWDS), fc.array(fc.nat(TYPES.length - 1), { minLength: 1, maxLength: 4 }))
    .map(([i, c, t]) => new StartSessionCommand(i, c, t));
  const listArbitrary = fc
    .tuple(fc.constantFrom(...CWDS), fc.integer({ min: 1, max: 3 }), fc.boolean())
    .map(([c, l, a]) => new ListCommand(c, l, a));
  return [
    startArbitrary,
    startArbitrary,
    fc
      .tuple(id, fc.constantFrom(...CWDS), fc.array(fc.nat(TYPES.length - 1), { minLength: 1, maxLength: 3 }))
      .map(([i, c, t]) => new ShadowedReservationCommand(i, c, t)),
    id.map((i) => new ReservationProbeCommand(i)),
    createArbitrary,
    createArbitrary,
    appendArbitrary,
    appendArbitrary,
    appendArbitrary,
    loadArbitrary,
    loadArbitrary,
    readArbitraryFor(id),
    id.map((i) => new HasCommand(i)),
    id.map((i) => new HasCommand(i)),
    listArbitrary,
    listArbitrary,
    updateArbitraryFor(id),
    id.map((i) => new DeleteCommand(i)),
    fc
      .tuple(id, fc.constantFrom<DeleteIfCommand['version']>('current', 'current', 'stale', 'garbage'))
      .map(([i, v]) => new DeleteIfCommand(i, v)),
    fc
      .constantFrom<BadListCommand['query']>({ limit: 0 }, { cursor: 'garbage' }, { limit: 1.5 }, { cwd: 3 })
      .map((q) => new BadListCommand(q)),
    closeArbitraryFor(id),
  ];
}

const scenarioArbitrary = fc.constantFrom('s0', 's1').chain((i) =>
  fc
    .tuple(
      fc.constantFrom(...CWDS),
      fc.array(fc.nat(TYPES.length - 1), { minLength: 1, maxLength: 3 }),
      fc.array(onEitherInstance(fc.oneof(...perInstanceArbitrariesFor(fc.constant(i)))), {
        minLength: 1,
        maxLength: 2,
      }),
      fc.constantFrom<0 | 1>(0, 1),
    )
    .map(
      ([c, t, middle, instance]) =>
        new ReservationScenarioCommand(new ShadowedReservationCommand(i, c, t), middle, instance),
    ),
);

/** Every kind of command a sequence of the model-based test draws from. */
export const commandArbitraries: fc.Arbitrary<Cmd>[] = [
  ...perInstanceArbitrariesFor(id).map(onEitherInstance),
  scenarioArbitrary,
  scenarioArbitrary,
  fc.constant(new ReopenCommand()),
  fc
    .tuple(id, fc.array(fc.nat(TYPES.length - 1), { minLength: 1, maxLength: 3 }))
    .map(([i, t]) => new RaceCommand(i, t)),
];
