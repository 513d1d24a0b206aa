/**
 * What a protected resource tells a client that is refused (RFC 6750 §3, RFC 9728 §5.1): where its
 * metadata is, and why the token was not taken.
 */

export type ChallengeError = 'invalid_token' | 'insufficient_scope';

/** `Bearer resource_metadata="…"`, with `error="…"` (and `scope="…"`) when a token was sent and refused. */
export function bearerChallenge(metadataUrl: string, error?: ChallengeError, scope?: string): string {
  let challenge = `Bearer resource_metadata="${metadataUrl}"`;
  if (error !== undefined) challenge += `, error="${error}"`;
  if (scope !== undefined) challenge += `, scope="${scope}"`;
  return challenge;
}
