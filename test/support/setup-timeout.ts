/**
 * The timeout of a real-node file's set-up (its `before` hook, or a test that brings up its own
 * stack), in milliseconds: 60 minutes. Its wait for the real node's lock counts against it: where
 * `npm test` builds the Go sets as its files need them (none built before it), the file before it
 * held the node 18 minutes where it holds it 6 when they are built, and its own sets may still be
 * building. A hang still ends it well within CI's 90 minutes.
 */
export const REAL_NODE_SETUP_TIMEOUT_MS = 60 * 60_000;
