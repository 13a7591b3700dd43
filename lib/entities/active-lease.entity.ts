import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One running attempt of a job: who holds it, its last heartbeat and its hard deadline. */
@Entity({ schema: 'awa', name: 'active_leases', synchronize: false })
export class AwaActiveLeaseEntity {
  @PrimaryColumn({ type: 'bigint', name: 'job_id' }) jobId!: string;
  @PrimaryColumn({ type: 'bigint', name: 'run_lease' }) runLease!: string;
  @Column({ type: 'text', name: 'instance_id' }) instanceId!: string;
  @Column({ type: 'timestamptz', name: 'heartbeat_at' }) heartbeatAt!: Date;
  @Column({ type: 'timestamptz', name: 'deadline_at', nullable: true }) deadlineAt!: Date | null;
  @Column({ type: 'timestamptz', name: 'claimed_at' }) claimedAt!: Date;
  /** producer.cancel() was called for this attempt: it ends `cancelled`. */
  @Column({ type: 'boolean', name: 'cancel_requested' }) cancelRequested!: boolean;
}
