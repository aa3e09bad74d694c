// The table behind is_pytorch_name(): PyTorch's public torch.*,
// torch.nn.functional.*, torch.linalg.*, torch.special.*, torch.fft.* and
// Tensor method names (as of PyTorch 2.x; names only, for messages).
#include "frontend/pytorch_names.h"

#include <map>
#include <set>
#include <sstream>

#include "frontend/diagnostics.h"

namespace kiln::frontend {

namespace {

// Names shared by torch.* and Tensor methods (x.abs() and torch.abs(x)).
const char* const kCommon =
    "abs absolute acos acosh add addbmm addcdiv addcmul addmm addmv addr adjoint all allclose "
    "amax amin aminmax angle any arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax "
    "argmin argwhere asin asinh atan atan2 atanh baddbmm bernoulli bincount "
    "bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor bmm "
    "broadcast_to bucketize ceil cholesky cholesky_inverse cholesky_solve chunk clamp clamp_max "
    "clamp_min clip clone conj conj_physical copysign corrcoef cos cosh count_nonzero cov cross "
    "cummax cummin cumprod cumsum deg2rad det diag diag_embed diagflat diagonal diagonal_scatter "
    "diff digamma dist div divide dot dsplit dstack eq equal erf erfc erfinv exp exp2 expm1 "
    "fix flatten flip fliplr flipud float_power floor floor_divide fmax fmin fmod frac frexp "
    "gather gcd ge geqrf ger greater greater_equal gt heaviside histc hsplit hstack hypot i0 "
    "igamma "
    "igammac imag index_add index_copy index_fill index_put index_reduce index_select inner "
    "inverse isclose isfinite isin isinf isnan isneginf isposinf isreal kron lcm ldexp le "
    "lerp less less_equal lgamma log log10 log1p log2 logaddexp logaddexp2 logcumsumexp logdet "
    "logical_and logical_not logical_or logical_xor logit logsumexp lt lu lu_solve "
    "masked_fill masked_scatter masked_select matmul matrix_exp matrix_power max maximum mean "
    "min minimum mm mode moveaxis movedim mul multinomial multiply mv mvlgamma "
    "nan_to_num nanmean nanmedian nanquantile nansum narrow narrow_copy ne neg negative nextafter "
    "nonzero norm not_equal numel orgqr ormqr outer permute pinverse polygamma positive pow prod "
    "qr quantile rad2deg ravel real reciprocal remainder renorm repeat_interleave reshape "
    "resolve_conj "
    "resolve_neg roll rot90 round rsqrt scatter scatter_add scatter_reduce select select_scatter "
    "sgn sigmoid sign signbit sin sinc sinh slice_scatter slogdet softmax split sqrt square "
    "squeeze std sub subtract sum svd swapaxes swapdims t take take_along_dim tan tanh "
    "tensor_split tile trace transpose trapezoid triangular_solve tril triu true_divide trunc "
    "unbind unflatten unique unique_consecutive unsqueeze var vdot view_as_complex view_as_real "
    "vsplit vstack where xlogy";

const char* const kTorchOnly =
    "adaptive_avg_pool1d adaptive_max_pool1d alpha_dropout arange as_strided as_tensor "
    "atleast_1d atleast_2d atleast_3d avg_pool1d batch_norm bartlett_window "
    "binary_cross_entropy_with_logits "
    "blackman_window block_diag broadcast_shapes broadcast_tensors cartesian_prod cat cdist "
    "celu chain_matmul combinations complex concat concatenate conv1d conv2d conv3d "
    "conv_transpose1d conv_transpose2d conv_transpose3d cosine_similarity cumulative_trapezoid "
    "dropout einsum empty empty_like empty_strided eye feature_dropout finfo from_numpy frombuffer "
    "full full_like get_default_dtype group_norm hamming_window hann_window histogram "
    "iinfo instance_norm is_complex is_floating_point is_grad_enabled is_nonzero is_tensor "
    "kaiser_window layer_norm linspace logspace manual_seed meshgrid no_grad normal ones "
    "ones_like pairwise_distance pdist pixel_shuffle pixel_unshuffle poisson prelu rand "
    "rand_like randint randint_like randn randn_like randperm range relu rrelu rsub "
    "scalar_tensor searchsorted selu set_default_dtype set_grad_enabled sparse_coo_tensor "
    "stack std_mean stft istft tensor tensordot threshold tril_indices triu_indices unravel_index "
    "vander var_mean vmap zeros zeros_like";

const char* const kTensorOnly =
    "absolute_ addcdiv_ addcmul_ apply_ argwhere backward bernoulli_ bfloat16 bool byte cauchy_ "
    "char contiguous copy_ cpu cuda data_ptr detach detach_ dim dim_order double element_size "
    "expand expand_as exponential_ fill_ fill_diagonal_ float geometric_ half index_put_ "
    "int is_contiguous is_floating_point is_complex is_cuda is_leaf log_normal_ long "
    "map_ masked_fill_ masked_scatter_ ndimension nelement new_empty new_full new_ones "
    "new_tensor new_zeros normal_ numpy pin_memory put_ random_ register_hook relu relu_ "
    "repeat requires_grad_ reshape_as resize_ resize_as_ retain_grad scatter_ scatter_add_ "
    "scatter_reduce_ share_memory_ short size storage storage_offset stride sum_to_size "
    "to tolist type type_as unfold uniform_ untyped_storage view view_as zero_";

const char* const kFunctional =
    "adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d "
    "adaptive_max_pool2d adaptive_max_pool3d affine_grid alpha_dropout avg_pool1d avg_pool2d "
    "avg_pool3d batch_norm bilinear binary_cross_entropy binary_cross_entropy_with_logits celu "
    "conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d cosine_embedding_loss "
    "cosine_similarity cross_entropy ctc_loss dropout dropout1d dropout2d dropout3d elu embedding "
    "embedding_bag feature_alpha_dropout fold fractional_max_pool2d gaussian_nll_loss gelu glu "
    "grid_sample group_norm gumbel_softmax hardshrink hardsigmoid hardswish hardtanh "
    "hinge_embedding_loss huber_loss instance_norm interpolate kl_div l1_loss layer_norm "
    "leaky_relu linear local_response_norm log_softmax logsigmoid lp_pool1d lp_pool2d "
    "margin_ranking_loss max_pool1d max_pool2d max_pool3d max_unpool1d max_unpool2d mish "
    "mse_loss multi_head_attention_forward multi_margin_loss multilabel_margin_loss "
    "multilabel_soft_margin_loss nll_loss normalize one_hot pad pairwise_distance pdist "
    "pixel_shuffle pixel_unshuffle poisson_nll_loss prelu relu relu6 relu_ rms_norm rrelu "
    "scaled_dot_product_attention selu sigmoid silu smooth_l1_loss soft_margin_loss softmax "
    "softmin softplus softshrink softsign tanh tanhshrink threshold triplet_margin_loss unfold "
    "upsample upsample_bilinear upsample_nearest";

const char* const kLinalg =
    "cholesky cholesky_ex cond cross det diagonal eig eigh eigvals eigvalsh householder_product "
    "inv inv_ex ldl_factor lstsq lu lu_factor lu_solve matmul matrix_exp matrix_norm "
    "matrix_power matrix_rank multi_dot norm pinv qr slogdet solve solve_ex solve_triangular svd "
    "svdvals tensorinv tensorsolve vander vecdot vector_norm";

const char* const kSpecial =
    "airy_ai bessel_j0 bessel_j1 digamma entr erf erfc erfcx erfinv exp2 expit expm1 gammainc "
    "gammaincc gammaln i0 i0e i1 i1e log1p log_ndtr log_softmax logit logsumexp multigammaln ndtr "
    "ndtri polygamma psi round sinc softmax xlog1py xlogy zeta";

const char* const kFft =
    "fft fft2 fftfreq fftn fftshift hfft ifft ifft2 ifftn ifftshift ihfft irfft irfft2 irfftn "
    "rfft rfft2 rfftfreq rfftn";

void add_words(std::set<std::string>& out, const char* words) {
  std::istringstream in(words);
  std::string w;
  while (in >> w) out.insert(w);
}

const std::map<std::string, std::set<std::string>>& table() {
  static const std::map<std::string, std::set<std::string>> t = [] {
    std::map<std::string, std::set<std::string>> m;
    add_words(m["torch"], kCommon);
    add_words(m["torch"], kTorchOnly);
    add_words(m["Tensor"], kCommon);
    add_words(m["Tensor"], kTensorOnly);
    add_words(m["F"], kFunctional);
    add_words(m["torch.linalg"], kLinalg);
    add_words(m["torch.special"], kSpecial);
    add_words(m["torch.fft"], kFft);
    // torch's submodules and classes, reached as attributes of `torch`.
    const char* modules = "linalg special fft nn jit cuda autograd distributions sparse";
    add_words(m["torch"], modules);
    add_words(m["torch.<module>"], modules);
    add_words(m["torch"], "Size Generator");
    return m;
  }();
  return t;
}

// Ops whose output shape depends on the data: Kiln compiles static shapes.
std::string data_dependent_note(const std::string& name) {
  if (name == "nonzero" || name == "argwhere")
    return "its output shape depends on the data, which Kiln's static shapes cannot express; "
           "use a mask with torch.where(cond, x, y) instead";
  if (name == "masked_select")
    return "its output shape depends on the data, which Kiln's static shapes cannot express; "
           "use torch.where(mask, x, 0) or x.masked_fill(~mask, 0) instead";
  if (name == "unique" || name == "unique_consecutive" || name == "bincount")
    return "its output shape depends on the data, which Kiln's static shapes cannot express";
  return "";
}

}  // namespace

bool is_pytorch_name(const std::string& space, const std::string& name) {
  auto it = table().find(space);
  return it != table().end() && it->second.count(name) > 0;
}

std::string missing_name_message(const std::string& space, const std::string& name,
                                 const std::vector<std::string>& kiln_names, std::string& note) {
  note.clear();
  bool method = space == "Tensor";
  std::string shown = space == "F" ? "torch.nn.functional" : space;
  // `x.add_()` is Tensor.add_ when PyTorch has Tensor.add.
  std::string base = name.size() > 1 && name.back() == '_' ? name.substr(0, name.size() - 1) : name;
  bool known = is_pytorch_name(space, name) || (method && is_pytorch_name(space, base));
  if (known) {
    note = data_dependent_note(method ? base : name);
    if (method)
      return "'Tensor." + name + "' is a PyTorch tensor method that Kiln does not support yet";
    bool submodule = space == "torch" && is_pytorch_name("torch.<module>", name);
    return "'" + shown + "." + name + "' is a PyTorch " + (submodule ? "module" : "function") +
           " that Kiln does not support yet";
  }
  std::string near = nearest_name(name, kiln_names);
  std::string head = method ? "tensor has no method or attribute '" + name + "'"
                            : "'" + shown + "' has no function '" + name + "'";
  if (near.empty()) {
    // A misspelt PyTorch name that Kiln lacks: say both.
    auto it = table().find(space);
    if (it != table().end()) {
      std::string py = nearest_name(name, {it->second.begin(), it->second.end()});
      if (!py.empty()) {
        return head + "; did you mean '" + py + "'? (a PyTorch " +
               (method ? "tensor method" : "function") + " that Kiln does not support yet)";
      }
    }
  }
  return head +
         (near.empty() ? std::string(" that Kiln supports") : "; did you mean '" + near + "'?");
}

}  // namespace kiln::frontend
