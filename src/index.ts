export * from './engine/engine';
