import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A live (or recently live) worker instance: one Nest application process running AwaModule. */
@Entity({ schema: 'awa', name: 'instances', synchronize: false })
export class AwaInstanceEntity {
  @PrimaryColumn({ type: 'text' }) id!: string;
  @Column({ type: 'text' }) hostname!: string;
  @Column({ type: 'integer' }) pid!: number;
  @Column({ type: 'text', array: true }) queues!: string[];
  /** The kinds this instance has handlers for, and the queue of each: { kind: queue }. */
  @Column({ type: 'jsonb' }) handlers!: Record<string, string>;
  /** The names of the schedules this instance declares in code (@Periodic and the option `schedules`). */
  @Column({ type: 'text', array: true }) schedules!: string[];
  @Column({ type: 'integer', name: 'lock_key' }) lockKey!: number;
  @Column({ type: 'timestamptz', name: 'started_at' }) startedAt!: Date;
  @Column({ type: 'timestamptz', name: 'heartbeat_at' }) heartbeatAt!: Date;
  /** The options rescues of its leases follow: heartbeatStaleAfter and per-queue retry settings. */
  @Column({ type: 'jsonb' }) settings!: {
    heartbeatStaleAfter?: number;
    queues?: Record<string, { retryBaseDelay: number; retryMaxDelay: number }>;
  };
}
