// Starts the vendored Swagger UI on the app's own schema (the URL comes from the page, so a
// root path is respected). A file of its own because the page's policy allows no inline script.
const root = document.getElementById("swagger-ui");
window.ui = window.SwaggerUIBundle({
  url: root.dataset.openapiUrl,
  domNode: root,
  deepLinking: true,
  presets: [window.SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
