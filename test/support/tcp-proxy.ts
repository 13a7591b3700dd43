import { createServer, connect, type Server, type Socket } from 'node:net';

/** Picks connections by the first bytes their client sent (a PostgreSQL startup packet names the application). */
export type ConnectionFilter = (firstPacket: string) => boolean;
const all: ConnectionFilter = () => true;

/**
 * What one direction of a link forwards late (latency): in order, each at least `latencyMs` after it
 * came, never before what came earlier (a lowered latency must not reorder the stream).
 */
class DelayLine {
  private readonly items: { due: number; fn: () => void }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private lastDue = 0;

  push(latencyMs: number, fn: () => void): void {
    const now = performance.now();
    if (latencyMs <= 0 && this.items.length === 0) return fn();
    this.lastDue = Math.max(now + latencyMs, this.lastDue);
    this.items.push({ due: this.lastDue, fn });
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.items.length === 0) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        const now = performance.now();
        while (this.items.length > 0 && this.items[0]!.due <= now) this.items.shift()!.fn();
        this.schedule();
      },
      Math.max(0, this.items[0]!.due - performance.now()),
    );
  }
}

interface Link {
  /** Client to server, and back: each direction's packets and close, delayed by the latency. */
  up: DelayLine;
  down: DelayLine;
  client: Socket;
  upstream: Socket;
  /** The client's first packet, as latin1 text. */
  first: string;
  frozen: boolean;
  /** Data held back while frozen, per direction, in order. */
  toUpstream: Buffer[];
  toClient: Buffer[];
  /** A close held back while frozen: delivered at thaw. */
  clientEnded: boolean;
  upstreamEnded: boolean;
}

/**
 * A TCP proxy for fault injection in tests: it forwards to `target`, and on demand resets
 * connections (destroys both sockets) or freezes them (forwards nothing, not even a close, as a
 * half-open connection or a stalled network does) until thawed. New connections can be frozen as
 * they arrive, or refused.
 */
export class TcpProxy {
  private readonly links = new Set<Link>();
  /** The first packet of every connection ever opened. */
  private readonly firsts: string[] = [];
  private freezeNew: ConnectionFilter | undefined;
  private refuseNew: ConnectionFilter | undefined;
  /** Added to every packet's way, each direction (a database far from its clients). */
  private latencyMs = 0;

  private constructor(
    private readonly server: Server,
    private readonly target: { host: string; port: number },
  ) {}

  /** Starts a proxy on a free port of 127.0.0.1. */
  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const server = createServer();
    const proxy = new TcpProxy(server, target);
    server.on('connection', (client) => proxy.accept(client));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  static url(url: string, proxy: TcpProxy): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(proxy.port);
    return u.toString();
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  /** Open connections (optionally only those matching `filter`). */
  count(filter: ConnectionFilter = all): number {
    return [...this.links].filter((l) => l.first !== '' && filter(l.first)).length;
  }

  /** Connections ever opened (optionally only those matching `filter`). */
  opened(filter: ConnectionFilter = all): number {
    return this.firsts.filter(filter).length;
  }

  /** Destroys matching connections on both sides at once (the server sees its peer vanish). */
  reset(filter: ConnectionFilter = all): number {
    const hit = [...this.links].filter((l) => filter(l.first));
    for (const link of hit) this.drop(link);
    return hit.length;
  }

  /** Stops forwarding on matching connections, and (with `newOnes`) on matching new ones, until thaw(). */
  freeze(filter: ConnectionFilter = all, { newOnes = false } = {}): number {
    if (newOnes) this.freezeNew = filter;
    const hit = [...this.links].filter((l) => filter(l.first));
    for (const link of hit) link.frozen = true;
    return hit.length;
  }

  /** Delivers everything held back and forwards again. */
  thaw(): void {
    this.freezeNew = undefined;
    for (const link of this.links) {
      if (!link.frozen) continue;
      link.frozen = false;
      this.flush(link);
    }
  }

  /** Delays everything forwarded from now on by `ms` each way (0: none), keeping each stream's order. */
  latency(ms: number): void {
    this.latencyMs = ms;
  }

  /** Destroys matching new connections as soon as their first packet shows who they are (until refuse(undefined)). */
  refuse(filter: ConnectionFilter | undefined): void {
    this.refuseNew = filter;
  }

  async close(): Promise<void> {
    for (const link of this.links) this.drop(link);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    const upstream = connect(this.target.port, this.target.host);
    const link: Link = {
      up: new DelayLine(),
      down: new DelayLine(),
      client,
      upstream,
      first: '',
      frozen: false,
      toUpstream: [],
      toClient: [],
      clientEnded: false,
      upstreamEnded: false,
    };
    this.links.add(link);
    client.on('data', (data: Buffer) => {
      if (link.first === '') {
        link.first = data.toString('latin1');
        this.firsts.push(link.first);
        if (this.refuseNew?.(link.first)) return this.drop(link);
        if (this.freezeNew?.(link.first)) link.frozen = true;
      }
      link.up.push(this.latencyMs, () => {
        link.toUpstream.push(data);
        this.flush(link);
      });
    });
    upstream.on('data', (data: Buffer) =>
      link.down.push(this.latencyMs, () => {
        link.toClient.push(data);
        this.flush(link);
      }),
    );
    client.on('end', () =>
      link.up.push(this.latencyMs, () => {
        link.clientEnded = true;
        this.flush(link);
      }),
    );
    upstream.on('end', () =>
      link.down.push(this.latencyMs, () => {
        link.upstreamEnded = true;
        this.flush(link);
      }),
    );
    for (const socket of [client, upstream]) {
      socket.on('error', () => this.drop(link));
      socket.on('close', () => {
        // An abrupt close (no FIN) is passed on like a reset, unless frozen: then thaw() delivers it.
        if (!link.frozen) this.drop(link);
        else if (socket === client) link.clientEnded = true;
        else link.upstreamEnded = true;
      });
    }
  }

  private flush(link: Link): void {
    if (link.frozen) return;
    for (const data of link.toUpstream.splice(0)) link.upstream.write(data);
    for (const data of link.toClient.splice(0)) link.client.write(data);
    if (link.clientEnded) link.upstream.end();
    if (link.upstreamEnded) link.client.end();
    if (link.clientEnded && link.upstreamEnded) this.links.delete(link);
  }

  private drop(link: Link): void {
    this.links.delete(link);
    link.client.destroy();
    link.upstream.destroy();
  }
}
