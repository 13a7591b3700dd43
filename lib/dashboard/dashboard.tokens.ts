/** Injection token of the resolved dashboard options. */
export const DASHBOARD_OPTIONS = Symbol('AWA_DASHBOARD_OPTIONS');
/** Injection token of the dashboard's controller class (made per path by forRoot). */
export const DASHBOARD_CONTROLLER = Symbol('AWA_DASHBOARD_CONTROLLER');
