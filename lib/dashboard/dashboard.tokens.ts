/** Injection token of the resolved dashboard options. */
export const DASHBOARD_OPTIONS = Symbol('AWA_DASHBOARD_OPTIONS');
