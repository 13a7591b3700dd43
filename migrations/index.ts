import { AwaInit1764400000000 } from './1764400000000-AwaInit.js';
import { AwaCancelRequests1764500000001 } from './1764500000001-AwaCancelRequests.js';
import { AwaClaimIndexes1764500000002 } from './1764500000002-AwaClaimIndexes.js';
import { AwaInstanceSettings1764500000003 } from './1764500000003-AwaInstanceSettings.js';
import { AwaLeaderLease1764500000004 } from './1764500000004-AwaLeaderLease.js';
import { AwaJobLifecycle1764600000000 } from './1764600000000-AwaJobLifecycle.js';
import { AwaSchedules1764600000001 } from './1764600000001-AwaSchedules.js';
import { AwaAdminIndexes1764600000005 } from './1764600000005-AwaAdminIndexes.js';
import { AwaFlowControl1764600000002 } from './1764600000002-AwaFlowControl.js';
import { AwaTraceContext1764600000003 } from './1764600000003-AwaTraceContext.js';
import { AwaKeyedReady1764700000000 } from './1764700000000-AwaKeyedReady.js';
import { AwaScheduleDeclarations1764700000001 } from './1764700000001-AwaScheduleDeclarations.js';
import { AwaQueueCountEstimates1764700000004 } from './1764700000004-AwaQueueCountEstimates.js';
import { AwaRateLogEnds1764700000005 } from './1764700000005-AwaRateLogEnds.js';
import { AwaJobHistory1764800000000 } from './1764800000000-AwaJobHistory.js';
import { AwaWorkflows1764900000000 } from './1764900000000-AwaWorkflows.js';
import { AwaJobEvents1764900000200 } from './1764900000200-AwaJobEvents.js';
import { AwaClaimWorkflowId1765000000000 } from './1765000000000-AwaClaimWorkflowId.js';
import { AwaHotTableStorage1765000000500 } from './1765000000500-AwaHotTableStorage.js';
import { AwaLeaseTableScans1765100000000 } from './1765100000000-AwaLeaseTableScans.js';
import { AwaHotTableKeepPages1765100000001 } from './1765100000001-AwaHotTableKeepPages.js';
import { AwaWorkerOffers1765200000000 } from './1765200000000-AwaWorkerOffers.js';

export {
  AwaInit1764400000000,
  AwaCancelRequests1764500000001,
  AwaClaimIndexes1764500000002,
  AwaInstanceSettings1764500000003,
  AwaLeaderLease1764500000004,
  AwaJobLifecycle1764600000000,
  AwaSchedules1764600000001,
  AwaFlowControl1764600000002,
  AwaAdminIndexes1764600000005,
  AwaTraceContext1764600000003,
  AwaKeyedReady1764700000000,
  AwaScheduleDeclarations1764700000001,
  AwaQueueCountEstimates1764700000004,
  AwaRateLogEnds1764700000005,
  AwaJobHistory1764800000000,
  AwaWorkflows1764900000000,
  AwaJobEvents1764900000200,
  AwaClaimWorkflowId1765000000000,
  AwaHotTableStorage1765000000500,
  AwaLeaseTableScans1765100000000,
  AwaHotTableKeepPages1765100000001,
  AwaWorkerOffers1765200000000,
};

/** The bundled migrations, in order. Add them to your DataSource `migrations`. */
export const AwaMigrations = [
  AwaInit1764400000000,
  AwaCancelRequests1764500000001,
  AwaClaimIndexes1764500000002,
  AwaInstanceSettings1764500000003,
  AwaLeaderLease1764500000004,
  AwaJobLifecycle1764600000000,
  AwaSchedules1764600000001,
  AwaFlowControl1764600000002,
  AwaTraceContext1764600000003,
  AwaAdminIndexes1764600000005,
  AwaKeyedReady1764700000000,
  AwaScheduleDeclarations1764700000001,
  AwaQueueCountEstimates1764700000004,
  AwaRateLogEnds1764700000005,
  AwaJobHistory1764800000000,
  AwaWorkflows1764900000000,
  AwaJobEvents1764900000200,
  AwaClaimWorkflowId1765000000000,
  AwaHotTableStorage1765000000500,
  AwaLeaseTableScans1765100000000,
  AwaHotTableKeepPages1765100000001,
  AwaWorkerOffers1765200000000,
];
