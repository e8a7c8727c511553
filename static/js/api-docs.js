// Starts the vendored Swagger UI on /docs. Kept out of the page (CSP script-src 'self'); the
// schema's URL comes from the page, so the app's root path is respected.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const root = document.getElementById("swagger-ui");
  window.ui = window.SwaggerUIBundle({
    url: root.dataset.openapiUrl,
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    // No "validator badge": it would send the schema to validator.swagger.io.
    validatorUrl: null,
    presets: [window.SwaggerUIBundle.presets.apis],
  });
});
