import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** A row of the app's own, written in the same transaction as the job that renders it. */
@Entity({ name: 'sample_reports' })
export class Report {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'text' }) title!: string;
  @Column({ type: 'integer' }) pages!: number;
  @Column({ type: 'text', default: 'queued' }) status!: 'queued' | 'rendered';
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'rendered_at', nullable: true }) renderedAt!: Date | null;
}
