"""The request gate: what a request may ask (depth, aliases, cost, list sizes), how large an
answer may grow, who may write, and the cache of validated documents."""
