// Minimal Panda CSS config, as `panda init` writes it but without the @pandacss/dev import.
export default {
  preflight: true,
  include: ["./src/**/*.{js,jsx,ts,tsx}"],
  exclude: [],
  outdir: "styled-system",
};
