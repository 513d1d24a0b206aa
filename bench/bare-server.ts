/**
 * The bench's yardstick: a bare node:http server doing the least a JSON API can do — read the body, parse it,
 * answer a fixed row's JSON (bench/json-server.ts). The row's answer comes in env BARE_ANSWER.
 */
import { serveJson } from './json-server.js';

const answer: unknown = JSON.parse(process.env.BARE_ANSWER ?? '{}');

serveJson(() => answer);
