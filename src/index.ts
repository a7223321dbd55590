export * from './store/engine';
