import { ForbiddenException } from '@nestjs/common';
import { AwaDashboardMessages } from './dashboard.messages.js';

type Headers = Record<string, string | string[] | undefined>;

const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/**
 * Refuses an action that a browser sent from another origin, whatever CORS the host app sets (a
 * credentialed CORS policy lets another site's script call the API with the user's cookies).
 * Browsers mark each request with Sec-Fetch-Site (Chromium 76, Firefox 90, Safari 16.4), which no
 * script can set: only `same-origin` passes; `same-site` (another port or subdomain of the host)
 * does not. A browser without it still sends Origin on a cross-origin POST or DELETE: it must name
 * the request's Host. X-Forwarded-Host is not read: with CORS reflecting request headers, a
 * cross-site script could set it. A request with neither header comes from no browser (curl, a
 * script), carries no victim's cookies, and is left to the guard.
 */
export function refuseCrossSite(headers: Headers): void {
  const site = first(headers['sec-fetch-site']);
  if (site !== undefined) {
    if (site !== 'same-origin') throw new ForbiddenException(AwaDashboardMessages.crossSite(`sec-fetch-site: ${site}`));
    return;
  }
  const origin = first(headers['origin']);
  if (origin === undefined) return;
  let host: string | null = null;
  try {
    host = new URL(origin).host;
  } catch {
    // "null" (an opaque origin: a sandboxed frame, a file) is no URL: refused below.
  }
  if (host === null || host !== first(headers['host']))
    throw new ForbiddenException(AwaDashboardMessages.crossSite(`origin: ${origin}`));
}
