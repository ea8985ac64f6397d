# R's coxph with cluster = id (robust sandwich variance for several rows per subject): the reference values of
# tests/regression/r_reference/cox_cluster.json (read by tests/regression/test_cox_cluster.py; R is not needed to test).
#
# Regenerate (R >= 4.2 with survival >= 3.5; apt-get install r-base-core r-cran-survival), from the repository root:
#     Rscript tools/r_reference/cox_cluster.R
#
# The robust variance is D'D, D the dfbeta residuals (score residuals times the inverse information) summed within
# each cluster (Lin & Wei 1989; Therneau & Grambsch 2000, section 7.2); with a cluster R's Wald test (and each
# coefficient's z and p) uses it, the likelihood-ratio and score tests do not, and the robust score test is the score
# test of beta = 0 with the score residuals at 0 summed within cluster. coxph runs with its convergence rule
# tightened (eps = 1e-14), as tools/r_reference/coxph.R does.
suppressPackageStartupMessages({library(survival); library(jsonlite)})
invisible(Sys.setlocale("LC_COLLATE", "C"))
control <- coxph.control(eps = 1e-14, toler.chol = 1e-15, iter.max = 200)

chi <- function(statistic, df) c(statistic, df, pchisq(statistic, df, lower.tail = FALSE))

summarise <- function(fit) {
  s <- summary(fit)
  p <- length(coef(fit))
  list(coefficients = unname(coef(fit)), se = unname(sqrt(diag(fit$naive.var))),
       robust_se = unname(sqrt(diag(fit$var))), robust_var = unname(fit$var),
       z = unname(s$coefficients[, "z"]), p_value = unname(s$coefficients[, "Pr(>|z|)"]),
       loglik = fit$loglik, n = fit$n, events = fit$nevent,
       likelihood_ratio = chi(2 * diff(fit$loglik), p), score = chi(unname(fit$score), p),
       robust_wald = chi(unname(fit$wald.test), p), robust_score = chi(unname(fit$rscore), p))
}

out <- list(generated_by = "tools/r_reference/cox_cluster.R", r_version = R.version.string,
            survival_version = as.character(packageVersion("survival")), bundled = list(), synthetic = list())

# kidney: two recurrence times per patient (id), the data set of Therneau & Grambsch's examples
d <- read.csv("dpsurv_core/data/bundled/kidney.csv", stringsAsFactors = FALSE)
d$sex <- factor(as.character(d$sex), levels = c("1", "2"))
for (ties in c("efron", "breslow")) {
  fit <- coxph(Surv(time, status) ~ age + sex + frail, data = d, ties = ties, cluster = id, control = control)
  out$bundled[[length(out$bundled) + 1]] <- c(list(data = "kidney", covariates = c("age", "sex", "frail"),
    categorical = list(sex = c("1", "2")), ties = ties, names = names(coef(fit))), summarise(fit))
}

# synthetic: 2 to 4 rows per subject, few distinct times (heavy ties), a subject-level and a row-level covariate
set.seed(20261129)
subjects <- 45
k <- sample(2:4, subjects, replace = TRUE)
id <- rep(seq_len(subjects), k)
x1 <- rep(round(rnorm(subjects), 3), k)
frame <- data.frame(id = id, time = sample(1:12, length(id), replace = TRUE), event = rbinom(length(id), 1, 0.65),
                    x1 = x1, x2 = rbinom(length(id), 1, 0.45))
# one-row-per-subject clusters: the robust variance is then the plain sandwich (Lin & Wei 1989)
single <- data.frame(id = 1:50, time = round(rexp(50) * 20, 1), event = rbinom(50, 1, 0.7),
                     x1 = round(rnorm(50), 3))
synthetic <- list(list(name = "repeated_heavy_ties", frame = frame, formula = Surv(time, event) ~ x1 + x2),
                  list(name = "one_row_each", frame = single, formula = Surv(time, event) ~ x1))
for (s in synthetic) {
  for (ties in c("efron", "breslow")) {
    fit <- coxph(s$formula, data = s$frame, ties = ties, cluster = id, control = control)
    out$synthetic[[length(out$synthetic) + 1]] <- c(list(name = s$name, ties = ties, data = s$frame,
                                                         names = names(coef(fit))), summarise(fit))
  }
}
# jsonlite writes at most 15 significant digits: every double is written here with 17 ("%.17g", round-trip exact)
g17 <- function(x) sprintf("%.17g", as.double(x))
verbatim <- function(x) {
  if (is.data.frame(x)) return(lapply(as.list(x), verbatim))
  if (is.list(x)) return(lapply(x, verbatim))
  if (!is.numeric(x)) return(x)
  text <- if (is.matrix(x)) paste0("[", paste(apply(x, 1, function(r) paste0("[", paste(g17(r), collapse = ","), "]")),
                                               collapse = ","), "]")
          else if (length(x) == 1) g17(x) else paste0("[", paste(g17(x), collapse = ","), "]")
  structure(text, class = "json")
}
dir.create("tests/regression/r_reference", showWarnings = FALSE, recursive = TRUE)
writeLines(toJSON(verbatim(out), json_verbatim = TRUE, auto_unbox = TRUE, pretty = FALSE),
           "tests/regression/r_reference/cox_cluster.json")
