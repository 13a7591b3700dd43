import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** One invoice per rendered report: the billing group's write, keyed by the job so a redelivery adds nothing. */
@Entity({ name: 'sample_invoices' })
export class Invoice {
  @PrimaryColumn({ type: 'bigint', name: 'job_id' }) jobId!: string;
  @Column({ type: 'text' }) kind!: string;
  /** The durable event that produced it. */
  @Column({ type: 'bigint', name: 'event_id' }) eventId!: string;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
}
