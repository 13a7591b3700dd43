import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

/** The sample's dashboard guard: requests from this machine only. A real app checks its own auth. */
@Injectable()
export class LocalhostGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ socket?: { remoteAddress?: string } }>();
    return LOOPBACK.has(request.socket?.remoteAddress ?? '');
  }
}
