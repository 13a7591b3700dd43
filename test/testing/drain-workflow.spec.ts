import { Injectable } from '@nestjs/common';
import { JobHandler, QueueProducer, type Job } from 'nestjs-awa';
import { AwaTesting } from 'nestjs-awa/testing';
import { useManualApp } from './testing-app.js';

@Injectable()
class Pages {
  readonly log: string[] = [];

  @JobHandler('page.render')
  async render(job: Job<{ page: number }>) {
    this.log.push(`render ${job.args.page}`);
    return job.args.page;
  }

  @JobHandler('pages.merge')
  async merge(job: Job) {
    const pages = await job.dependencyResults<number>();
    this.log.push(`merge ${pages.map((p) => p.output).join(',')}`);
  }
}

/** AwaTesting.drain() runs a workflow to its end: each job once its dependencies have completed. */
describe('AwaTesting.drain with a workflow (testing: true)', () => {
  const block = useManualApp([Pages]);

  it('runs the children, then the parent that reads their outputs', async () => {
    const producer = block.app.get(QueueProducer);
    const flow = await producer.enqueueFlow({
      kind: 'pages.merge',
      args: {},
      children: [1, 2].map((page) => ({ kind: 'page.render', args: { page } })),
    });
    const result = await block.app.get(AwaTesting).drain();
    expect(result.completed).toBe(3);
    expect(block.app.get(Pages).log).toEqual(['render 1', 'render 2', 'merge 1,2']);
    expect((await producer.getJob(flow.id))?.state).toBe('completed');
  });
});
