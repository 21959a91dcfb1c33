-- Monthly revenue per region, 2024; the corpus's SQL sample.
SELECT r.name AS region,
       date_trunc('month', o.created_at) AS month,
       SUM(o.total_cents) / 100.0        AS revenue,
       COUNT(*) FILTER (WHERE o.status = 'refunded') AS refunds
  FROM orders o
  JOIN regions r ON r.id = o.region_id
 WHERE o.created_at >= '2024-01-01' AND o.created_at < '2025-01-01'
 GROUP BY 1, 2
HAVING SUM(o.total_cents) > 1000000
 ORDER BY region, month;
