// PageRank: one iteration of the power method on a graph of n nodes stored as CSR of in-links, one work-item per
// node. src[rowptr[i] .. rowptr[i+1]-1] are the nodes that link to node i; outdeg[j] is the out-degree of node j.
//   rank_new[i] = (1 - d) / n + d * sum_{k = rowptr[i]}^{rowptr[i+1]-1} rank[src[k]] / outdeg[src[k]]
// The sum runs in k order in a float accumulator (so does the CPU reference). An iterative driver swaps rank and
// rank_new between launches.

__kernel void pagerank(__global const int* rowptr, __global const int* src, __global const int* outdeg,
                       __global const float* rank, __global float* rank_new, float d, int n) {
  const int i = (int)get_global_id(0);
  if (i >= n) return;
  const int end = rowptr[i + 1];
  float acc = 0.0f;
  for (int k = rowptr[i]; k < end; ++k) {
    const int s = src[k];
    acc += rank[s] / (float)outdeg[s];
  }
  rank_new[i] = (1.0f - d) / (float)n + d * acc;
}
