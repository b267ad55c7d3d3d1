// The stylesheet as text: the standalone build (standalone/build.mjs) loads .css as a string.
declare module '*.css' {
  const text: string;
  export default text;
}
