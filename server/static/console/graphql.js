// The console's GraphQL client: POST /graphql with the token from the token field.
// The token lives in sessionStorage (this tab's session only) and is sent as a bearer header,
// never in a URL. Ids are opaque strings from the API: never parsed, never built.

const TOKEN_KEY = "digestd.console.token";

export function savedToken() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function saveToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** A request the API refused or could not answer; `code` is the error's extensions.code. */
export class ApiError extends Error {
  constructor(message, code = null, status = 0) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.status = status;
  }

  get needsToken() {
    return this.status === 401 || this.code === "UNAUTHENTICATED";
  }
}

/** Runs one operation; resolves to `data`, throws an ApiError when the API reports errors. */
export async function gql(query, variables = {}) {
  const headers = { "content-type": "application/json", accept: "application/json" };
  const token = savedToken();
  if (token) headers.authorization = `Bearer ${token}`;
  let response;
  try {
    response = await fetch("/graphql", {
      method: "POST",
      headers,
      body: JSON.stringify({ query, variables }),
      credentials: "omit",
    });
  } catch (error) {
    throw new ApiError(`digestd did not answer (${error.message})`);
  }
  let body = null;
  try {
    body = await response.json();
  } catch {
    throw new ApiError(`digestd answered HTTP ${response.status} without JSON`, null, response.status);
  }
  const errors = Array.isArray(body?.errors) ? body.errors : [];
  if (response.status === 401 || errors.length) {
    const first = errors[0] || {};
    const message = errors.map((e) => e.message).join("; ") || `HTTP ${response.status}`;
    throw new ApiError(message, first.extensions?.code ?? null, response.status);
  }
  return body.data;
}

/**
 * Every node of a connection, page by page (at most `maxPages` pages), or until `enough(nodes)`
 * says so. `pick(data)` returns the connection; the query takes `$after`.
 */
export async function allNodes(query, variables, pick, { maxPages = 20, enough = () => false } = {}) {
  const nodes = [];
  let after = null;
  for (let page = 0; page < maxPages; page += 1) {
    const connection = pick(await gql(query, { ...variables, after }));
    nodes.push(...connection.nodes);
    if (!connection.pageInfo.hasNextPage || enough(nodes)) break;
    after = connection.pageInfo.endCursor;
  }
  return nodes;
}

let subscriptionFieldsPromise = null;

/** The subscription root's fields ({name, typeName, fields}), asked once per page load. */
export function subscriptionFields() {
  subscriptionFieldsPromise ??= gql(`{ __schema { subscriptionType { fields { name
      type { name kind ofType { name kind ofType { name kind } } } } } } }`)
    .then(async (data) => {
      const fields = data.__schema.subscriptionType?.fields ?? [];
      return Promise.all(fields.map(async (field) => {
        const typeName = namedType(field.type);
        const type = typeName ? await gql(`query($n: String!) { __type(name: $n) { fields { name } } }`, { n: typeName }) : null;
        return { name: field.name, typeName, fields: (type?.__type?.fields ?? []).map((f) => f.name) };
      }));
    })
    .catch((error) => {
      subscriptionFieldsPromise = null; // e.g. no token yet: ask again next time
      throw error;
    });
  return subscriptionFieldsPromise;
}

function namedType(type) {
  let current = type;
  while (current && !current.name) current = current.ofType;
  return current?.name ?? null;
}
